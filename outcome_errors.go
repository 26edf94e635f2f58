package leasehold

import (
	"errors"
	"fmt"
	"time"
)

// PermanentError marks a handler error that must not be retried: the job
// fails at once whatever its remaining budget.
type PermanentError struct{ Err error }

// Texts of the outcome errors that carry no error of their own: given by
// Permanent(nil) and Cancel(nil), and read from a zero or nil
// *PermanentError or *CancelError, which a handler may return as well.
const (
	permanentFailure   = "permanent failure"
	cancelledByHandler = "cancelled by handler"
)

// Error returns "permanent: " and Err's text ("permanent failure" if none).
func (e *PermanentError) Error() string { return "permanent: " + textOr(e.Unwrap(), permanentFailure) }

// Unwrap returns Err, or nil when e is nil.
func (e *PermanentError) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.Err
}

// Permanent wraps err so the job fails without retry.
func Permanent(err error) error {
	if err == nil {
		err = errors.New(permanentFailure)
	}
	return &PermanentError{Err: err}
}

// SnoozeError asks for the job to run again after Delay without charging
// the attempt to its retry budget. A negative Delay, or a nil
// *SnoozeError, snoozes for 0, as Snooze does.
type SnoozeError struct{ Delay time.Duration }

// Error returns "snoozed for " and the delay the job is snoozed for.
func (e *SnoozeError) Error() string { return fmt.Sprintf("snoozed for %v", e.delay()) }

// delay is Delay, or 0 when e is nil or Delay negative: a handler may
// build the error itself, and a negative delay would put the job back
// ahead of jobs that were due before it.
func (e *SnoozeError) delay() time.Duration {
	if e == nil || e.Delay < 0 {
		return 0
	}
	return e.Delay
}

// Snooze returns an error that reschedules the job after d (database
// clock) without spending its retry budget.
func Snooze(d time.Duration) error {
	if d < 0 {
		d = 0
	}
	return &SnoozeError{Delay: d}
}

// CancelError asks for the job to be cancelled: it ends in the cancelled
// state and never runs again.
type CancelError struct{ Err error }

// Error returns "cancelled: " and Err's text ("cancelled by handler" if none).
func (e *CancelError) Error() string { return "cancelled: " + textOr(e.Unwrap(), cancelledByHandler) }

// Unwrap returns Err, or nil when e is nil.
func (e *CancelError) Unwrap() error {
	if e == nil {
		return nil
	}
	return e.Err
}

// Cancel returns an error that cancels the job, recording err.
func Cancel(err error) error {
	if err == nil {
		err = errors.New(cancelledByHandler)
	}
	return &CancelError{Err: err}
}

// PanicError is the failure recorded when a handler panics: the job is
// retried like any failure, and the value and stack are kept in the
// attempt history. A periodic slot whose Args or insert middleware
// panicked is skipped, and the log has its refusal wrapping a PanicError.
type PanicError struct {
	Value any
	Stack []byte
}

// Error returns "panic: ", Value, a newline and Stack ("panic: <nil>" if e is nil).
func (e *PanicError) Error() string {
	if e == nil {
		return "panic: <nil>"
	}
	return fmt.Sprintf("panic: %v\n%s", e.Value, e.Stack)
}

// textOr returns err's text, or def when err is nil: the outcome errors
// are exported structs, so a handler may build one without its error, and
// classify reads the text before it looks at the outcome.
func textOr(err error, def string) string {
	if err == nil {
		return def
	}
	return err.Error()
}
