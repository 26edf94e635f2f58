package leaseholdotel_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	leaseholdotel "github.com/leasehold/leasehold/contrib/otel"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/pgdriver"
	"github.com/leasehold/leasehold/sqlitedriver"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// callerTx is a transaction of the test's own on d, for CompleteTx.
type callerTx struct {
	tx       any
	commit   func() error
	rollback func() error
}

// beginOn begins a transaction on d's database.
func beginOn(ctx context.Context, t *testing.T, d driver.Driver) (*callerTx, error) {
	switch d := d.(type) {
	case *sqlitedriver.Driver:
		tx, err := d.DB().BeginTx(ctx, nil)
		if err != nil {
			return nil, err
		}
		return &callerTx{tx: tx, commit: tx.Commit, rollback: tx.Rollback}, nil
	case *pgdriver.Driver:
		tx, err := d.Pool().Begin(ctx)
		if err != nil {
			return nil, err
		}
		return &callerTx{tx: tx, commit: func() error { return tx.Commit(context.Background()) },
			rollback: func() error { return tx.Rollback(context.Background()) }}, nil
	}
	t.Fatalf("no transaction for driver %T", d)
	return nil, nil
}

// completeInTx completes job with CompleteTx in a transaction of its own
// on d, which it then commits, or rolls back unless commit.
func completeInTx(ctx context.Context, t *testing.T, d driver.Driver, job *leasehold.JobRow, commit bool) error {
	tx, err := beginOn(ctx, t, d)
	if err != nil {
		return err
	}
	if err := leasehold.ClientFromContext(ctx).CompleteTx(ctx, tx.tx, job); err != nil {
		_ = tx.rollback()
		return err
	}
	if !commit {
		return tx.rollback()
	}
	return tx.commit()
}

// wantEvent checks that span s records an error event whose message is
// text.
func wantEvent(t *testing.T, s tracetest.SpanStub, text string) {
	t.Helper()
	for _, ev := range s.Events {
		if ev.Name == "exception" && attrs(ev.Attributes)["exception.message"] == text {
			return
		}
	}
	t.Errorf("work span has no exception event %q: %+v", text, s.Events)
}

// TestCompleteTxCommittedThenErrorSpan: a handler completes its job with
// CompleteTx in a transaction that commits, then returns an error. The job
// is completed (the client's write of the error is refused by the fence,
// and the attempt's history says completed), so the span says completed,
// status Unset, with the handler's error recorded as an event.
func TestCompleteTxCommittedThenErrorSpan(t *testing.T) {
	onEachDriver(t, func(t *testing.T, d driver.Driver) {
		e := setupOn(t, d, leaseholdotel.Options{}, false, false)
		c := otherClient(t, d, e, leasehold.Config{DefaultMaxAttempts: 2,
			RetryPolicy: &leasehold.ExponentialBackoff{Base: time.Hour, Max: time.Hour}},
			func(ctx context.Context, job *leasehold.Job[otherArgs]) error {
				if err := completeInTx(ctx, t, d, job.JobRow, true); err != nil {
					return err
				}
				return errors.New("error after the completion committed")
			})
		res, err := c.Insert(t.Context(), otherArgs{}, nil)
		must(t, err)
		must(t, c.Start(t.Context()))
		last := waitState(t, c, res.Job.ID, leasehold.StateCompleted)
		span := e.waitSpans(t, trace.SpanKindConsumer, 1)[0]
		wantSpanEnding(t, span, string(leasehold.OutcomeCompleted), "")
		wantEvent(t, span, "error after the completion committed")
		if last.Outcome != leasehold.OutcomeCompleted {
			t.Errorf("last attempt %s, want completed", last.Outcome)
		}
	})
}

// TestCompleteTxRolledBackThenNilSpan: a handler's CompleteTx succeeds
// but its transaction rolls back, and the handler returns nil. The job is
// not done: the client charges the attempt (ErrCompleteTxRolledBack) and,
// its budget spent, fails it, so the span says error with that error.
func TestCompleteTxRolledBackThenNilSpan(t *testing.T) {
	onEachDriver(t, func(t *testing.T, d driver.Driver) {
		e := setupOn(t, d, leaseholdotel.Options{}, false, false)
		c := otherClient(t, d, e, leasehold.Config{DefaultMaxAttempts: 1},
			func(ctx context.Context, job *leasehold.Job[otherArgs]) error {
				return completeInTx(ctx, t, d, job.JobRow, false)
			})
		res, err := c.Insert(t.Context(), otherArgs{}, nil)
		must(t, err)
		must(t, c.Start(t.Context()))
		last := waitState(t, c, res.Job.ID, leasehold.StateFailed)
		span := e.waitSpans(t, trace.SpanKindConsumer, 1)[0]
		wantSpanEnding(t, span, leaseholdotel.OutcomeError, leasehold.ErrCompleteTxRolledBack.Error())
		if last.Outcome != leasehold.OutcomeFailed {
			t.Errorf("last attempt %s, want failed", last.Outcome)
		}
	})
}

// TestCompleteTxCommittedThenStopSpan: a handler completes its job with
// CompleteTx in a transaction that commits, then outlives the shutdown
// timeout and is cut off by Stop. The client's release is refused (the
// job is completed), in a plain queue as in a FlagStuck one, where
// nothing is written: the span says completed, not released.
func TestCompleteTxCommittedThenStopSpan(t *testing.T) {
	for _, tc := range []struct {
		name   string
		queues map[string]leasehold.QueueConfig
	}{
		{"plain", nil},
		{"flagstuck", map[string]leasehold.QueueConfig{leasehold.DefaultQueue: {FlagStuck: true}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			onEachDriver(t, func(t *testing.T, d driver.Driver) {
				e := setupOn(t, d, leaseholdotel.Options{}, false, false)
				committed := make(chan struct{})
				c := otherClient(t, d, e, leasehold.Config{ShutdownTimeout: 50 * time.Millisecond, Queues: tc.queues},
					func(ctx context.Context, job *leasehold.Job[otherArgs]) error {
						if err := completeInTx(ctx, t, d, job.JobRow, true); err != nil {
							return err
						}
						close(committed)
						<-ctx.Done() // cut off by Stop once its ShutdownTimeout has passed
						return nil
					})
				res, err := c.Insert(t.Context(), otherArgs{}, nil)
				must(t, err)
				must(t, c.Start(t.Context()))
				<-committed
				must(t, c.Stop(context.Background()))
				span := e.waitSpans(t, trace.SpanKindConsumer, 1)[0]
				wantSpanEnding(t, span, string(leasehold.OutcomeCompleted), "")
				if last := waitState(t, c, res.Job.ID, leasehold.StateCompleted); last.Outcome != leasehold.OutcomeCompleted {
					t.Errorf("last attempt %s, want completed", last.Outcome)
				}
			})
		})
	}
}
