package leaseholdotel_test

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	leaseholdotel "github.com/leasehold/leasehold/contrib/otel"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/sqlitedriver"
	"github.com/leasehold/leasehold/sqlitedriver/sqlitetest"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// TestLostLeaseSpan: a handler whose lease is taken over while it runs,
// and which returns nil once its context ends (a late "success" the
// client's fenced write refuses), gets a work span with outcome
// lease_lost and status Error, not completed; the next attempt, which
// completes, gets outcome completed.
func TestLostLeaseSpan(t *testing.T) {
	ctx := t.Context()
	drv := sqlitetest.Open(t)
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	held := make(chan struct{}, 1)
	c := lostLeaseClient(t, drv, leaseholdotel.New(leaseholdotel.Options{TracerProvider: tp}), held)
	_, err := c.Insert(ctx, taskArgs{}, nil)
	must(t, err)
	<-held
	takeOver(t, drv)
	spans := waitConsumerSpans(t, exp, 2)
	for deadline := time.Now().Add(10 * time.Second); c.Stats().Completed != 1; {
		if time.Now().After(deadline) {
			t.Fatal("the second attempt did not complete within 10s")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if st := c.Stats(); st.FinishRefused != 1 {
		t.Errorf("Stats FinishRefused=%d, want 1: the first attempt's late completion refused", st.FinishRefused)
	}
	for _, s := range spans {
		a := attrs(s.Attributes)
		switch a["leasehold.job.attempt"] {
		case int64(1):
			if a["leasehold.outcome"] != "lease_lost" || s.Status.Code != codes.Error || len(s.Events) == 0 {
				t.Errorf("attempt 1: outcome %v, status %v, %d events; want lease_lost, Error and the recorded error",
					a["leasehold.outcome"], s.Status.Code, len(s.Events))
			}
		case int64(2):
			if a["leasehold.outcome"] != "completed" || s.Status.Code != codes.Unset {
				t.Errorf("attempt 2: outcome %v, status %v; want completed, Unset", a["leasehold.outcome"], s.Status.Code)
			}
		default:
			t.Errorf("span of attempt %v", a["leasehold.job.attempt"])
		}
	}
}

// lostLeaseClient returns a started client on drv traced by tr, whose
// task handler signals held on its first attempt, waits for its context
// to end and returns nil all the same.
func lostLeaseClient(t *testing.T, drv *sqlitedriver.Driver, tr *leaseholdotel.Tracer, held chan<- struct{}) *leasehold.Client {
	t.Helper()
	workers := leasehold.NewWorkers()
	must(t, leasehold.AddWorker(workers, leasehold.WorkFunc[taskArgs](func(ctx context.Context, job *leasehold.Job[taskArgs]) error {
		if job.Attempt == 1 {
			held <- struct{}{}
			<-ctx.Done()
		}
		return nil
	})))
	return startTraced(t, drv, workers, tr)
}

// startTraced returns a started client on drv running workers, traced by
// tr: leases of 600 ms, one job at a time, no watcher.
func startTraced(t *testing.T, drv driver.Driver, workers *leasehold.Workers, tr *leaseholdotel.Tracer) *leasehold.Client {
	t.Helper()
	c, err := leasehold.NewClient(leasehold.Config{Driver: drv, Workers: workers, LeaseTTL: 600 * time.Millisecond,
		PollInterval: 20 * time.Millisecond, DisableWatcher: true,
		Queues:           map[string]leasehold.QueueConfig{"default": {MaxWorkers: 1}},
		InsertMiddleware: []leasehold.InsertMiddleware{tr.InsertMiddleware()},
		WorkMiddleware:   []leasehold.WorkMiddleware{tr.WorkMiddleware()},
		Logger:           slog.New(slog.NewTextHandler(io.Discard, nil))})
	must(t, err)
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	must(t, c.Start(t.Context()))
	return c
}

// takeOver expires the running job's lease in the database and has
// another client rescue it, as another worker's watcher would (c's own
// leaves the leases c holds alone): the job is pending again and the
// running handler's heartbeat finds its lease gone.
func takeOver(t *testing.T, drv *sqlitedriver.Driver) {
	t.Helper()
	ctx := t.Context()
	other, err := leasehold.NewClient(leasehold.Config{Driver: drv})
	must(t, err)
	for deadline := time.Now().Add(10 * time.Second); ; {
		_, err := drv.DB().ExecContext(ctx, `UPDATE leasehold_jobs SET lease_until = 0 WHERE status = 'processing'`)
		must(t, err)
		moved, err := other.RescueExpired(ctx)
		must(t, err)
		if len(moved) == 1 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the lease was not rescued within 10s")
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitConsumerSpans waits until exp holds n work spans, and returns them.
func waitConsumerSpans(t *testing.T, exp *tracetest.InMemoryExporter, n int) []tracetest.SpanStub {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; {
		var got []tracetest.SpanStub
		for _, s := range exp.GetSpans() {
			if s.SpanKind == trace.SpanKindConsumer {
				got = append(got, s)
			}
		}
		if len(got) >= n {
			return got
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d work spans after 10s, want %d", len(got), n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
