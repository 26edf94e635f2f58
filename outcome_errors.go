package leasehold

import (
	"errors"
	"fmt"
	"time"
)

// PermanentError marks a handler error that must not be retried: the job
// fails at once whatever its remaining budget.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return "permanent: " + e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// Permanent wraps err so the job fails without retry.
func Permanent(err error) error {
	if err == nil {
		err = errors.New("permanent failure")
	}
	return &PermanentError{Err: err}
}

// SnoozeError asks for the job to run again after Delay without charging
// the attempt to its retry budget.
type SnoozeError struct{ Delay time.Duration }

func (e *SnoozeError) Error() string { return fmt.Sprintf("snoozed for %v", e.Delay) }

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

func (e *CancelError) Error() string { return "cancelled: " + e.Err.Error() }
func (e *CancelError) Unwrap() error { return e.Err }

// Cancel returns an error that cancels the job, recording err.
func Cancel(err error) error {
	if err == nil {
		err = errors.New("cancelled by handler")
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

func (e *PanicError) Error() string { return fmt.Sprintf("panic: %v\n%s", e.Value, e.Stack) }
