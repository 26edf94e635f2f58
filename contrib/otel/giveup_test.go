package leaseholdotel_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	leaseholdotel "github.com/leasehold/leasehold/contrib/otel"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/pgdriver/pgtest"
	"github.com/leasehold/leasehold/sqlitedriver/sqlitetest"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// errHeartbeatDown is what the heartbeats of a flakyHeartbeats fail with.
var errHeartbeatDown = errors.New("heartbeat: database out of reach")

// flakyHeartbeats is a driver whose heartbeats fail while down is set, as
// they do when the database is out of reach of the worker for a moment;
// every other call goes through.
type flakyHeartbeats struct {
	driver.Driver
	down atomic.Bool
}

func (d *flakyHeartbeats) Heartbeat(ctx context.Context, p *driver.HeartbeatParams) ([]*driver.HeartbeatResult, error) {
	if d.down.Load() {
		return nil, errHeartbeatDown
	}
	return d.Driver.Heartbeat(ctx, p)
}

// TestGivenUpLeaseSpan: heartbeats fail until the watchdog gives the
// lease up (nobody takes the job over), then work again, and the handler
// returns. The client writes what the handler returned, fenced, and the
// write applies: the span must say what the client wrote. A nil is a
// completion (outcome completed, no Error status); an error is the ending
// of a lease given up (lease_lost, the job retried). Both spans are marked
// given up.
func TestGivenUpLeaseSpan(t *testing.T) {
	for _, db := range []struct {
		name string
		open func(testing.TB) driver.Driver
	}{
		{"sqlite", func(t testing.TB) driver.Driver { return sqlitetest.Open(t) }},
		{"postgres", func(t testing.TB) driver.Driver { return pgtest.Open(t) }},
	} {
		t.Run(db.name+"/nil", func(t *testing.T) {
			span, job := runGivenUp(t, db.open(t), nil)
			a := attrs(span.Attributes)
			if a["leasehold.outcome"] != "completed" || span.Status.Code != codes.Unset {
				t.Errorf("outcome %v, status %v %q; want completed, Unset", a["leasehold.outcome"], span.Status.Code, span.Status.Description)
			}
			if a["leasehold.lease.given_up"] != true {
				t.Errorf("leasehold.lease.given_up = %v, want true", a["leasehold.lease.given_up"])
			}
			if job.State != leasehold.StateCompleted {
				t.Errorf("job %s, want completed: the fenced completion applies", job.State)
			}
		})
		t.Run(db.name+"/error", func(t *testing.T) {
			span, job := runGivenUp(t, db.open(t), errors.New("handler failed"))
			a := attrs(span.Attributes)
			if a["leasehold.outcome"] != "lease_lost" || span.Status.Code != codes.Error {
				t.Errorf("outcome %v, status %v; want lease_lost, Error", a["leasehold.outcome"], span.Status.Code)
			}
			if a["leasehold.lease.given_up"] != true {
				t.Errorf("leasehold.lease.given_up = %v, want true", a["leasehold.lease.given_up"])
			}
			if first := job.Attempts[0]; first.Outcome != leasehold.OutcomeLeaseLost || job.State == leasehold.StateFailed {
				t.Errorf("job %s, attempt 1 ended %s; want lease_lost, retried", job.State, first.Outcome)
			}
		})
	}
}

// runGivenUp runs one job on drv whose handler waits until the watchdog
// gives its lease up, heartbeats failing, and then returns ret, heartbeats
// working again. It returns the run's work span and the job once its
// outcome is written.
func runGivenUp(t *testing.T, drv driver.Driver, ret error) (tracetest.SpanStub, *leasehold.JobInfo) {
	t.Helper()
	ctx := t.Context()
	flaky := &flakyHeartbeats{Driver: drv}
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithSampler(sdktrace.AlwaysSample()))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	tr := leaseholdotel.New(leaseholdotel.Options{TracerProvider: tp})
	held := make(chan struct{}, 1)
	var cause atomic.Value
	workers := leasehold.NewWorkers()
	must(t, leasehold.AddWorker(workers, leasehold.WorkFunc[taskArgs](func(ctx context.Context, job *leasehold.Job[taskArgs]) error {
		if job.Attempt > 1 {
			return nil // a retry after the lease was given up
		}
		held <- struct{}{}
		<-ctx.Done()
		cause.Store(context.Cause(ctx))
		flaky.down.Store(false)
		return ret
	})))
	c := startTraced(t, flaky, workers, tr)
	res, err := c.Insert(ctx, taskArgs{}, &leasehold.InsertOpts{MaxAttempts: 5})
	must(t, err)
	<-held
	flaky.down.Store(true)
	span := waitConsumerSpans(t, exp, 1)[0]
	if err, _ := cause.Load().(error); !errors.Is(err, leasehold.ErrLeaseNotRenewed) || !errors.Is(err, leasehold.ErrLeaseLost) {
		t.Errorf("handler's context cause %v, want ErrLeaseNotRenewed wrapping ErrLeaseLost", err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; {
		job, err := c.GetJob(ctx, res.Job.ID)
		must(t, err)
		if len(job.Attempts) > 0 && !job.Attempts[0].EndedAt.IsZero() {
			return span, job
		}
		if time.Now().After(deadline) {
			t.Fatalf("the attempt's outcome was not written within 10s: job %s", job.State)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
