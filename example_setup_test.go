package leasehold_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/sqlitedriver"
)

// EmailArgs are the arguments of the examples' email job.
type EmailArgs struct {
	To string `json:"to"`
}

// Kind implements leasehold.Args.
func (EmailArgs) Kind() string { return "email" }

// newExampleClient returns a client running workers (nil for a client that
// only inserts and inspects jobs) on a migrated SQLite database in a new
// temporary directory, polling often so the examples finish quickly, and a
// func that stops the client and removes the database. tweaks change the
// configuration. The examples call Start themselves when they run workers.
func newExampleClient(workers *leasehold.Workers, tweaks ...func(*leasehold.Config)) (*leasehold.Client, func()) {
	dir, err := os.MkdirTemp("", "leasehold-example-")
	if err != nil {
		log.Fatal(err)
	}
	driver, err := sqlitedriver.Open(filepath.Join(dir, "jobs.db"))
	if err != nil {
		log.Fatal(err)
	}
	cfg := leasehold.Config{
		Driver:       driver,
		Workers:      workers,
		Owner:        "example-worker",
		PollInterval: 10 * time.Millisecond,
		Logger:       slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	for _, tweak := range tweaks {
		if tweak != nil {
			tweak(&cfg)
		}
	}
	client, err := leasehold.NewClient(cfg)
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Migrate(context.Background()); err != nil {
		log.Fatal(err)
	}
	return client, func() {
		_ = client.Stop(context.Background())
		_ = driver.Close()
		_ = os.RemoveAll(dir)
	}
}

// received collects what the examples' handlers saw, for the examples to
// wait on; the handlers run on the client's goroutines.
type received chan string

// wait returns the next n values, or stops the example after a minute.
func (r received) wait(n int) []string {
	var got []string
	for len(got) < n {
		select {
		case s := <-r:
			got = append(got, s)
		case <-time.After(time.Minute):
			log.Fatalf("examples: %d of %d handler calls after a minute", len(got), n)
		}
	}
	return got
}

// printHistory prints a job's state and attempt history as the examples
// show it: no times, which vary from run to run.
func printHistory(job *leasehold.JobInfo) {
	fmt.Printf("job %d: %s, attempt %d (%d charged of %d)\n",
		job.ID, job.State, job.Attempt, job.ChargedAttempts(), job.MaxAttempts)
	for _, a := range job.Attempts {
		if a.Error == "" {
			fmt.Printf("  attempt %d: %s\n", a.Attempt, a.Outcome)
		} else {
			fmt.Printf("  attempt %d: %s: %s\n", a.Attempt, a.Outcome, a.Error)
		}
	}
}
