package leaseholdotel_test

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	leaseholdotel "github.com/leasehold/leasehold/contrib/otel"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/pgdriver/pgtest"
	"github.com/leasehold/leasehold/sqlitedriver/sqlitetest"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// drivers are the databases the tests of this file run against.
var drivers = []struct {
	name string
	open func(testing.TB) driver.Driver
}{
	{"sqlite", func(t testing.TB) driver.Driver { return sqlitetest.Open(t) }},
	{"postgres", func(t testing.TB) driver.Driver { return pgtest.Open(t) }},
}

// onEachDriver runs test as a subtest on each of drivers.
func onEachDriver(t *testing.T, test func(*testing.T, driver.Driver)) {
	for _, tc := range drivers {
		t.Run(tc.name, func(t *testing.T) { test(t, tc.open(t)) })
	}
}

// otherClient returns a client on d whose work middleware traces into
// e's tracer provider and whose handler of other jobs is h; cfg gives
// the rest of its configuration.
func otherClient(t *testing.T, d driver.Driver, e *env, cfg leasehold.Config,
	h func(context.Context, *leasehold.Job[otherArgs]) error) *leasehold.Client {
	t.Helper()
	ws := leasehold.NewWorkers()
	must(t, leasehold.AddWorker(ws, leasehold.WorkFunc[otherArgs](h)))
	cfg.Driver, cfg.Workers, cfg.PollInterval = d, ws, 10*time.Millisecond
	cfg.WorkMiddleware = []leasehold.WorkMiddleware{leaseholdotel.New(leaseholdotel.Options{TracerProvider: e.tp}).WorkMiddleware()}
	c, err := leasehold.NewClient(cfg)
	must(t, err)
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	return c
}

// waitState waits until job id is in state s, and returns its last
// attempt.
func waitState(t *testing.T, c *leasehold.Client, id int64, s leasehold.JobState) *leasehold.Attempt {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		job, err := c.GetJob(context.Background(), id)
		must(t, err)
		if job.State == s && len(job.Attempts) > 0 {
			return job.Attempts[len(job.Attempts)-1]
		}
		if time.Now().After(deadline) {
			t.Fatalf("job %d %s after 30s, want %s", id, job.State, s)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// wantSpanEnding checks the outcome of work span s and that its status is
// Error with errText, or Unset when errText is empty.
func wantSpanEnding(t *testing.T, s tracetest.SpanStub, outcome, errText string) {
	t.Helper()
	if got := attrs(s.Attributes)["leasehold.outcome"]; got != outcome {
		t.Errorf("work span outcome %v, want %s", got, outcome)
	}
	want := codes.Error
	if errText == "" {
		want = codes.Unset
	}
	if s.Status.Code != want || s.Status.Description != errText {
		t.Errorf("work span status %v %q, want %v %q", s.Status.Code, s.Status.Description, want, errText)
	}
}

// TestShutdownCheckLeaseSpanSaysReleased: a handler that Stop cut off
// (its ShutdownTimeout passed) and that returns what CheckLease then says,
// an error wrapping ErrLeaseLost, was released by the client, which
// ignores what it returned: its work span says released, with no error
// status, not lease_lost.
func TestShutdownCheckLeaseSpanSaysReleased(t *testing.T) {
	onEachDriver(t, testShutdownCheckLeaseSpan)
}

func testShutdownCheckLeaseSpan(t *testing.T, d driver.Driver) {
	e := setupOn(t, d, leaseholdotel.Options{}, false, false)
	started := make(chan struct{}, 1)
	c := otherClient(t, d, e, leasehold.Config{ShutdownTimeout: 50 * time.Millisecond},
		func(ctx context.Context, _ *leasehold.Job[otherArgs]) error {
			started <- struct{}{}
			<-ctx.Done() // ended by Stop once its ShutdownTimeout has passed
			return leasehold.CheckLease(ctx)
		})
	res, err := c.Insert(t.Context(), otherArgs{}, nil)
	must(t, err)
	must(t, c.Start(t.Context()))
	<-started
	must(t, c.Stop(context.Background()))

	spans := e.waitSpans(t, trace.SpanKindConsumer, 1)
	wantSpanEnding(t, spans[0], string(leasehold.OutcomeReleased), "")
	if last := waitState(t, c, res.Job.ID, leasehold.StatePending); last.Outcome != leasehold.OutcomeReleased {
		t.Errorf("last attempt %s, want released", last.Outcome)
	}
}

// TestGoexitSpanSaysError: a handler that ends its goroutine with
// runtime.Goexit (as t.FailNow does) has not panicked: the client ends its
// attempt as a failure naming the Goexit, counting no panic, and its work
// span says error with that failure, not panic.
func TestGoexitSpanSaysError(t *testing.T) {
	onEachDriver(t, testGoexitSpan)
}

func testGoexitSpan(t *testing.T, d driver.Driver) {
	e := setupOn(t, d, leaseholdotel.Options{}, false, false)
	c := otherClient(t, d, e, leasehold.Config{DefaultMaxAttempts: 1},
		func(context.Context, *leasehold.Job[otherArgs]) error {
			runtime.Goexit()
			return nil
		})
	res, err := c.Insert(t.Context(), otherArgs{}, nil)
	must(t, err)
	must(t, c.Start(t.Context()))

	spans := e.waitSpans(t, trace.SpanKindConsumer, 1)
	last := waitState(t, c, res.Job.ID, leasehold.StateFailed)
	if last.Outcome != leasehold.OutcomeFailed || !strings.Contains(last.Error, "Goexit") {
		t.Fatalf("last attempt %s %q, want failed naming the Goexit", last.Outcome, last.Error)
	}
	wantSpanEnding(t, spans[0], leaseholdotel.OutcomeError, last.Error)
	if n := c.Stats().Panics; n != 0 {
		t.Errorf("%d panics counted, want 0", n)
	}
}

// TestPanicSpanKeepsTheClientsRecovery: the work middleware ends the span
// of a handler that panicked and lets the panic go on, so the client
// recovers it as if the middleware were not there: the attempt fails
// with the panic's value and a stack that holds the handler's frame, and
// the panic is counted.
func TestPanicSpanKeepsTheClientsRecovery(t *testing.T) {
	onEachDriver(t, testPanicSpan)
}

func testPanicSpan(t *testing.T, d driver.Driver) {
	e := setupOn(t, d, leaseholdotel.Options{}, false, false)
	c := otherClient(t, d, e, leasehold.Config{DefaultMaxAttempts: 1}, panicking)
	res, err := c.Insert(t.Context(), otherArgs{}, nil)
	must(t, err)
	must(t, c.Start(t.Context()))

	spans := e.waitSpans(t, trace.SpanKindConsumer, 1)
	wantSpanEnding(t, spans[0], leaseholdotel.OutcomePanic, "handler panicked")
	last := waitState(t, c, res.Job.ID, leasehold.StateFailed)
	if !strings.HasPrefix(last.Error, "panic: handler bug\n") || !strings.Contains(last.Error, "otel_test.panicking(") {
		t.Errorf("last attempt error %q, want the panic's value and the handler's frame", last.Error)
	}
	if n := c.Stats().Panics; n != 1 {
		t.Errorf("%d panics counted, want 1", n)
	}
}

// panicking is a handler that panics.
func panicking(context.Context, *leasehold.Job[otherArgs]) error {
	panic("handler bug")
}
