package leaseholdprom_test

import (
	"bufio"
	"context"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/leasehold/leasehold"
	leaseholdprom "github.com/leasehold/leasehold/contrib/prometheus"
	"github.com/leasehold/leasehold/sqlitedriver"
)

// EmailArgs are the arguments of an email job.
type EmailArgs struct {
	To string `json:"to"`
}

// Kind implements leasehold.Args.
func (EmailArgs) Kind() string { return "email" }

// Example wires the metrics into a client: the insert middleware in its
// Config, Attach before Start, and the registry served at /metrics.
func Example() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "leaseholdprom-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	drv, err := sqlitedriver.Open(filepath.Join(dir, "jobs.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer drv.Close()

	reg := prometheus.NewRegistry()
	metrics, err := leaseholdprom.New(leaseholdprom.Options{Registerer: reg})
	if err != nil {
		log.Fatal(err)
	}
	defer metrics.Close()
	workers := leasehold.NewWorkers()
	if err := leasehold.AddWorker(workers, leasehold.WorkFunc[EmailArgs](
		func(context.Context, *leasehold.Job[EmailArgs]) error { return nil })); err != nil {
		log.Fatal(err)
	}
	client, err := leasehold.NewClient(leasehold.Config{
		Driver: drv, Workers: workers,
		InsertMiddleware: []leasehold.InsertMiddleware{metrics.InsertMiddleware()},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Migrate(ctx); err != nil {
		log.Fatal(err)
	}
	if err := metrics.Attach(client); err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)
	mux := http.NewServeMux()
	mux.Handle("/metrics", leaseholdprom.Handler(reg))
	srv := httptest.NewServer(mux)
	defer srv.Close()

	if _, err := client.Insert(ctx, EmailArgs{To: "ada@example.com"}, nil); err != nil {
		log.Fatal(err)
	}
	done := `leasehold_jobs_finished_total{kind="email",outcome="completed",queue="default"} 1`
	for _, line := range scrapeUntil(srv.URL+"/metrics", done) {
		if strings.HasPrefix(line, "leasehold_jobs_inserted_total") || strings.HasPrefix(line, "leasehold_jobs_claimed_total") ||
			line == done {
			fmt.Println(line)
		}
	}
	// Output:
	// leasehold_jobs_claimed_total{kind="email",queue="default"} 1
	// leasehold_jobs_finished_total{kind="email",outcome="completed",queue="default"} 1
	// leasehold_jobs_inserted_total{kind="email",queue="default"} 1
}

// scrapeUntil fetches url until its body has the line want, and returns
// the body's lines.
func scrapeUntil(url, want string) []string {
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		resp, err := http.Get(url)
		if err != nil {
			log.Fatal(err)
		}
		var lines []string
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			lines = append(lines, sc.Text())
		}
		resp.Body.Close()
		for _, l := range lines {
			if l == want {
				return lines
			}
		}
	}
	log.Fatalf("%s never showed %s", url, want)
	return nil
}
