package leasehold

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrJobTimeout is the cause of a handler context cancelled because its
// kind's WorkerOptions.Timeout passed, and the sentinel the attempt's
// *TimeoutError matches.
var ErrJobTimeout = errors.New("leasehold: job timed out")

// TimeoutError is the error an attempt ends with when its handler returned
// an error after its kind's timeout cancelled its context: it matches
// ErrJobTimeout, and wraps what the handler returned (Err), so that
// Permanent, Snooze and Cancel keep their meaning.
type TimeoutError struct {
	// Timeout is the kind's WorkerOptions.Timeout.
	Timeout time.Duration
	// Err is the handler's error.
	Err error
}

// Error reads "timed out after 5s", followed by the handler's error when
// it says more than the context's own.
func (e *TimeoutError) Error() string {
	msg := fmt.Sprintf("timed out after %v", e.Timeout)
	if e.Err == nil || e.Err == ErrJobTimeout || e.Err == context.DeadlineExceeded {
		return msg
	}
	return msg + ": " + e.Err.Error()
}

// Unwrap returns ErrJobTimeout and the handler's error.
func (e *TimeoutError) Unwrap() []error { return []error{ErrJobTimeout, e.Err} }

// withTimeout returns run bounded by timeout (none when it is 0): run's
// context is cancelled with cause ErrJobTimeout when it passes, and an
// error run returns after that becomes a *TimeoutError. When the parent
// context was cancelled too (a lost lease, a cancel, a shutdown), run's
// error is left as it is, for the engine to end the attempt as those do.
func withTimeout(timeout time.Duration, run func(context.Context, *JobRow) error) func(context.Context, *JobRow) error {
	if timeout <= 0 {
		return run
	}
	return func(ctx context.Context, row *JobRow) error {
		tctx, cancel := context.WithTimeoutCause(ctx, timeout, ErrJobTimeout)
		defer cancel()
		err := run(tctx, row)
		if err != nil && ctx.Err() == nil && errors.Is(context.Cause(tctx), ErrJobTimeout) {
			return &TimeoutError{Timeout: timeout, Err: err}
		}
		return err
	}
}
