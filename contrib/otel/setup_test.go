package leaseholdotel_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	leaseholdotel "github.com/leasehold/leasehold/contrib/otel"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/sqlitedriver"
	"github.com/leasehold/leasehold/sqlitedriver/sqlitetest"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// taskArgs are the arguments of the test jobs; Do says how the handler
// ends.
type taskArgs struct {
	Do string `json:"do,omitempty"`
}

func (taskArgs) Kind() string { return "task" }

// otherArgs are a second kind, for mixed batches.
type otherArgs struct{}

func (otherArgs) Kind() string { return "other" }

const owner = "otel-test-worker"

// env is a client on a fresh SQLite database, traced into an in-memory
// exporter.
type env struct {
	client  *leasehold.Client
	driver  *sqlitedriver.Driver // set by setup, on SQLite
	tp      *sdktrace.TracerProvider
	spans   *tracetest.InMemoryExporter
	handled chan trace.SpanContext // the span context each handler saw
}

// setup builds an env whose client is traced by a Tracer made with o and
// the env's tracer provider; insert and work say which of its middleware
// to install. The client is not started.
func setup(t *testing.T, o leaseholdotel.Options, insert, work bool) *env {
	t.Helper()
	d := sqlitetest.Open(t)
	e := setupOn(t, d, o, insert, work)
	e.driver = d
	return e
}

// setupOn is setup on driver d.
func setupOn(t *testing.T, d driver.Driver, o leaseholdotel.Options, insert, work bool) *env {
	t.Helper()
	e := &env{
		spans:   tracetest.NewInMemoryExporter(),
		handled: make(chan trace.SpanContext, 16),
	}
	e.tp = sdktrace.NewTracerProvider(sdktrace.WithSyncer(e.spans), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	t.Cleanup(func() { _ = e.tp.Shutdown(context.Background()) })
	o.TracerProvider = e.tp
	tr := leaseholdotel.New(o)
	workers := leasehold.NewWorkers()
	must(t, leasehold.AddWorker(workers, leasehold.WorkFunc[taskArgs](e.handle)))
	must(t, leasehold.AddWorker(workers, leasehold.WorkFunc[otherArgs](func(ctx context.Context, _ *leasehold.Job[otherArgs]) error {
		e.handled <- trace.SpanContextFromContext(ctx)
		return nil
	})))
	cfg := leasehold.Config{
		Driver:             d,
		Workers:            workers,
		Owner:              owner,
		PollInterval:       10 * time.Millisecond,
		DefaultMaxAttempts: 1,
		Logger:             slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if insert {
		cfg.InsertMiddleware = []leasehold.InsertMiddleware{tr.InsertMiddleware()}
	}
	if work {
		cfg.WorkMiddleware = []leasehold.WorkMiddleware{tr.WorkMiddleware()}
	}
	c, err := leasehold.NewClient(cfg)
	must(t, err)
	e.client = c
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	return e
}

// handle is the handler of task jobs: it reports the span context it was
// given and ends as the job's arguments say.
func (e *env) handle(ctx context.Context, job *leasehold.Job[taskArgs]) error {
	e.handled <- trace.SpanContextFromContext(ctx)
	switch job.Args.Do {
	case "permanent":
		return leasehold.Permanent(errors.New("card declined"))
	case "error":
		return errors.New("provider timeout")
	case "snooze":
		return leasehold.Snooze(time.Hour)
	case "cancel":
		return leasehold.Cancel(errors.New("order withdrawn"))
	case "panic":
		panic("handler bug")
	}
	return nil
}

func (e *env) start(t *testing.T) {
	t.Helper()
	must(t, e.client.Start(t.Context()))
}

// waitHandled returns the span context the next handler call saw.
func (e *env) waitHandled(t *testing.T) trace.SpanContext {
	t.Helper()
	select {
	case sc := <-e.handled:
		return sc
	case <-time.After(30 * time.Second):
		t.Fatal("no handler ran within 30s")
		return trace.SpanContext{}
	}
}

// waitSpans waits until the exporter holds n spans of kind k, and returns
// them.
func (e *env) waitSpans(t *testing.T, k trace.SpanKind, n int) []tracetest.SpanStub {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := e.ofKind(k)
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d %v spans after 30s, want %d", len(got), k, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// ofKind returns the ended spans of kind k.
func (e *env) ofKind(k trace.SpanKind) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range e.spans.GetSpans() {
		if s.SpanKind == k {
			out = append(out, s)
		}
	}
	return out
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}
