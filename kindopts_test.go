package leasehold

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/statemachine"
)

// TestWithTimeout checks what a handler returning after its kind's
// timeout ends its attempt with: a *TimeoutError matching ErrJobTimeout
// that keeps the handler's error (and so Permanent), nil for nil, and the
// handler's error untouched when the lease's own context was cancelled.
func TestWithTimeout(t *testing.T) {
	const timeout = 20 * time.Millisecond
	waitThen := func(ret func(ctx context.Context) error) func(context.Context, *JobRow) error {
		return func(ctx context.Context, _ *JobRow) error {
			<-ctx.Done()
			return ret(ctx)
		}
	}
	ctx := t.Context()
	err := withTimeout(timeout, waitThen(func(ctx context.Context) error { return ctx.Err() }))(ctx, &JobRow{})
	var te *TimeoutError
	if !errors.As(err, &te) || !errors.Is(err, ErrJobTimeout) || !errors.Is(err, context.DeadlineExceeded) ||
		err.Error() != "timed out after 20ms" {
		t.Errorf("handler returning ctx.Err() after the timeout: %v, want a *TimeoutError reading \"timed out after 20ms\"", err)
	}
	err = withTimeout(timeout, waitThen(func(context.Context) error { return Permanent(errors.New("declined")) }))(ctx, &JobRow{})
	var perm *PermanentError
	if !errors.Is(err, ErrJobTimeout) || !errors.As(err, &perm) || err.Error() != "timed out after 20ms: permanent: declined" {
		t.Errorf("Permanent after the timeout: %v, want a *TimeoutError wrapping the *PermanentError", err)
	}
	if err := withTimeout(timeout, waitThen(func(context.Context) error { return nil }))(ctx, &JobRow{}); err != nil {
		t.Errorf("nil after the timeout: %v, want nil (the job completes)", err)
	}
	lease, cancel := context.WithCancelCause(ctx)
	cancel(ErrLeaseLost)
	err = withTimeout(time.Hour, waitThen(func(ctx context.Context) error { return context.Cause(ctx) }))(lease, &JobRow{})
	if !errors.Is(err, ErrLeaseLost) || errors.Is(err, ErrJobTimeout) {
		t.Errorf("lease lost before the timeout: %v, want ErrLeaseLost and no timeout", err)
	}
	lease, cancel = context.WithCancelCause(ctx)
	err = withTimeout(timeout, waitThen(func(ctx context.Context) error {
		cancel(ErrLeaseLost) // lost after the timeout, before the handler returned
		return ctx.Err()
	}))(lease, &JobRow{})
	if errors.Is(err, ErrJobTimeout) {
		t.Errorf("lease lost after the timeout: %v, want the handler's error for the engine to end the attempt as lost", err)
	}
	if got := withTimeout(0, waitThen(nil)); got == nil {
		t.Error("withTimeout(0, run) = nil, want run")
	}
}

// TestTimeoutClassified checks that a timed-out attempt is retried with
// the kind's policy while budget remains and fails once it is spent.
func TestTimeoutClassified(t *testing.T) {
	ws := NewWorkers()
	err := AddWorkerWithOptions(ws, WorkFunc[testKindArgs](func(context.Context, *Job[testKindArgs]) error { return nil }),
		WorkerOptions{Timeout: time.Second, RetryPolicy: constantRetry(time.Minute), MaxAttempts: 2})
	if err != nil {
		t.Fatal(err)
	}
	c := &Client{cfg: Config{Workers: ws, RetryPolicy: constantRetry(time.Hour)}, reconciler: statemachine.Reconciler(nil)}
	te := &TimeoutError{Timeout: time.Second, Err: context.DeadlineExceeded}
	got := c.classify(&JobRow{Kind: "kind_opts", Attempt: 1, MaxAttempts: 2}, te)
	if got.Outcome != OutcomeRetried || got.Delay != time.Minute || got.Error != "timed out after 1s" {
		t.Errorf("first timed-out attempt: %+v, want retried after the kind's minute, error \"timed out after 1s\"", got)
	}
	if got := c.classify(&JobRow{Kind: "kind_opts", Attempt: 2, MaxAttempts: 2}, te); got.Outcome != OutcomeFailed {
		t.Errorf("timed-out attempt with the budget spent: %+v, want failed", got)
	}
	if got := c.classify(&JobRow{Kind: "unknown", Attempt: 1, MaxAttempts: 2}, te); got.Delay != time.Hour {
		t.Errorf("kind without a policy: delay %v, want the client's hour", got.Delay)
	}
}

// TestWorkerOptionsRefused checks that options out of range are refused
// with ErrInvalidConfig and register nothing.
func TestWorkerOptionsRefused(t *testing.T) {
	w := WorkFunc[testKindArgs](func(context.Context, *Job[testKindArgs]) error { return nil })
	for _, o := range []WorkerOptions{{Timeout: -time.Second}, {MaxAttempts: -1}, {MaxAttempts: MaxMaxAttempts + 1}} {
		ws := NewWorkers()
		if err := AddWorkerWithOptions(ws, w, o); !errors.Is(err, ErrInvalidConfig) || len(ws.Kinds()) != 0 {
			t.Errorf("AddWorkerWithOptions(%+v) = %v, kinds %v; want ErrInvalidConfig and none", o, err, ws.Kinds())
		}
	}
}

type testKindArgs struct{}

func (testKindArgs) Kind() string { return "kind_opts" }

type constantRetry time.Duration

func (d constantRetry) NextRetry(*JobRow, error) time.Duration { return time.Duration(d) }
