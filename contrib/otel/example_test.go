package leaseholdotel_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/leasehold/leasehold"
	leaseholdotel "github.com/leasehold/leasehold/contrib/otel"
	"github.com/leasehold/leasehold/sqlitedriver"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// EmailArgs are the arguments of the example's job.
type EmailArgs struct {
	To string `json:"to"`
}

func (EmailArgs) Kind() string { return "email" }

// A Tracer plugs into a client through its insert and work middleware:
// the job's work span is a child of the span of its insert, which is a
// child of the caller's span. An application passes its own tracer
// provider (here one that keeps spans in memory, to print them).
func Example() {
	ctx := context.Background()
	spans := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(spans))
	tracing := leaseholdotel.New(leaseholdotel.Options{TracerProvider: tp})

	dir, err := os.MkdirTemp("", "leaseholdotel-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	driver, err := sqlitedriver.Open(filepath.Join(dir, "jobs.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer driver.Close()
	done := make(chan struct{})
	workers := leasehold.NewWorkers()
	err = leasehold.AddWorker(workers, leasehold.WorkFunc[EmailArgs](func(ctx context.Context, job *leasehold.Job[EmailArgs]) error {
		defer close(done)
		return nil // a real handler starts its own spans from ctx
	}))
	if err != nil {
		log.Fatal(err)
	}
	client, err := leasehold.NewClient(leasehold.Config{
		Driver:           driver,
		Workers:          workers,
		PollInterval:     10 * time.Millisecond,
		InsertMiddleware: []leasehold.InsertMiddleware{tracing.InsertMiddleware()},
		WorkMiddleware:   []leasehold.WorkMiddleware{tracing.WorkMiddleware()},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Migrate(ctx); err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(ctx)

	reqCtx, req := tp.Tracer("app").Start(ctx, "POST /signup")
	if _, err := client.Insert(reqCtx, EmailArgs{To: "ada@example.com"}, nil); err != nil {
		log.Fatal(err)
	}
	req.End()
	<-done
	for len(spans.GetSpans()) < 3 { // the work span ends after the handler returns
		time.Sleep(time.Millisecond)
	}
	names := map[string]string{}
	for _, s := range spans.GetSpans() {
		names[s.SpanContext.SpanID().String()] = s.Name
	}
	for _, s := range spans.GetSpans() {
		parent := names[s.Parent.SpanID().String()]
		if parent == "" {
			parent = "none"
		}
		fmt.Printf("%s (%s), parent: %s\n", s.Name, s.SpanKind, parent)
	}
	// Output:
	// leasehold.insert email (producer), parent: POST /signup
	// POST /signup (internal), parent: none
	// leasehold.work email (consumer), parent: leasehold.insert email
}
