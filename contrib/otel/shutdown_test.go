package leaseholdotel_test

import (
	"context"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	leaseholdotel "github.com/leasehold/leasehold/contrib/otel"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/pgdriver/pgtest"
	"github.com/leasehold/leasehold/sqlitedriver/sqlitetest"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"
)

// TestShutdownNilSpanSaysReleased: a handler that ignores its context and
// returns nil only after Stop's ShutdownTimeout has passed was cut off: the
// client released its lease (the job pending again, its attempt ended
// released) and ignores the nil. Its work span says released, with no
// error status, not completed.
func TestShutdownNilSpanSaysReleased(t *testing.T) {
	for _, tc := range []struct {
		name string
		open func(testing.TB) driver.Driver
	}{
		{"sqlite", func(t testing.TB) driver.Driver { return sqlitetest.Open(t) }},
		{"postgres", func(t testing.TB) driver.Driver { return pgtest.Open(t) }},
	} {
		t.Run(tc.name, func(t *testing.T) { testShutdownNilSpan(t, tc.open(t)) })
	}
}

func testShutdownNilSpan(t *testing.T, d driver.Driver) {
	e := setupOn(t, d, leaseholdotel.Options{}, false, false)
	started := make(chan struct{}, 1)
	stopped := make(chan struct{})
	ws := leasehold.NewWorkers()
	must(t, leasehold.AddWorker(ws, leasehold.WorkFunc[otherArgs](func(context.Context, *leasehold.Job[otherArgs]) error {
		started <- struct{}{}
		<-stopped // deaf to its context: it returns only once Stop has given up on it
		return nil
	})))
	mw := leaseholdotel.New(leaseholdotel.Options{TracerProvider: e.tp}).WorkMiddleware()
	c, err := leasehold.NewClient(leasehold.Config{Driver: d, Workers: ws, PollInterval: 10 * time.Millisecond,
		ShutdownTimeout: 50 * time.Millisecond, WorkMiddleware: []leasehold.WorkMiddleware{mw}})
	must(t, err)
	res, err := c.Insert(t.Context(), otherArgs{}, nil)
	must(t, err)
	must(t, c.Start(t.Context()))
	<-started
	must(t, c.Stop(context.Background()))
	close(stopped)

	spans := e.waitSpans(t, trace.SpanKindConsumer, 1)
	if len(spans) != 1 {
		t.Fatalf("%d work spans, want 1", len(spans))
	}
	if got := attrs(spans[0].Attributes)["leasehold.outcome"]; got != string(leasehold.OutcomeReleased) {
		t.Errorf("work span outcome %v, want released", got)
	}
	if spans[0].Status.Code != codes.Unset {
		t.Errorf("work span status %v %q, want Unset", spans[0].Status.Code, spans[0].Status.Description)
	}
	job, err := c.GetJob(context.Background(), res.Job.ID)
	must(t, err)
	if last := job.Attempts[len(job.Attempts)-1]; job.State != leasehold.StatePending || last.Outcome != leasehold.OutcomeReleased {
		t.Errorf("job %s, last attempt %s: want pending, released", job.State, last.Outcome)
	}
}
