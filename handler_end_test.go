package leasehold_test

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/sqlitedriver"
)

// nilPtrErr is an error type whose Error method dereferences its receiver,
// so a typed nil *nilPtrErr returned as an error panics when read.
type nilPtrErr struct{ msg string }

func (e *nilPtrErr) Error() string { return e.msg }

// nilUnwrapErr is an error type whose Error method is nil-safe and whose
// Unwrap dereferences its receiver: a typed nil one panics in errors.Is.
type nilUnwrapErr struct{ err error }

func (e *nilUnwrapErr) Error() string { return "wrapped" }
func (e *nilUnwrapErr) Unwrap() error { return e.err }

// nilIsErr is an error type whose Is method dereferences its receiver.
type nilIsErr struct{ target error }

func (e *nilIsErr) Error() string        { return "is" }
func (e *nilIsErr) Is(target error) bool { return e.target == target }

// TestTypedNilErrorIsAFailure: a handler that returns a typed nil pointer
// as its error (an error whose Error, Unwrap or Is method panics) does not
// take the process down: the attempt is a failure, retried while the
// budget lasts. One whose Error or Unwrap panics is recorded with the
// panic named and counted in Stats.Panics; one whose Is panics can only be
// matched against nothing, and is retried with its text.
func TestTypedNilErrorIsAFailure(t *testing.T) {
	const named = "panic while reading the handler's error"
	for _, tt := range []struct {
		name    string
		bad     error
		lastErr string
		panics  int64
	}{
		{"Error", (*nilPtrErr)(nil), named, 1},
		{"Unwrap", (*nilUnwrapErr)(nil), named, 1},
		{"Is", (*nilIsErr)(nil), "is", 0},
	} {
		t.Run(tt.name, func(t *testing.T) { typedNilErrorIsAFailure(t, tt.bad, tt.lastErr, tt.panics) })
	}
}

// typedNilErrorIsAFailure runs TestTypedNilErrorIsAFailure for the error
// bad: the job is retried with lastErr in its last error, and the client
// counts panics panics.
func typedNilErrorIsAFailure(t *testing.T, bad error, lastErr string, panics int64) {
	d, c, id := runReturning(t, bad, 2)
	deadline := time.Now().Add(30 * time.Second)
	for {
		row, err := d.GetJob(t.Context(), id)
		if err != nil {
			t.Fatalf("GetJob: %v", err)
		}
		if row.State == leasehold.StatePending && row.Attempt == 1 {
			if !strings.Contains(row.LastError, lastErr) {
				t.Fatalf("last error %q; want %q in it", row.LastError, lastErr)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job after a typed nil error: %s attempt %d; want pending, attempt 1 retried", row.State, row.Attempt)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if p := c.Stats().Panics; p != panics {
		t.Fatalf("Stats().Panics = %d, want %d", p, panics)
	}
}

// runReturning starts a client whose handler returns bad and inserts a
// job of maxAttempts attempts; it returns the driver, the client and the
// job's id.
func runReturning(t *testing.T, bad error, maxAttempts int) (*sqlitedriver.Driver, *leasehold.Client, int64) {
	t.Helper()
	ws := leasehold.NewWorkers()
	err := leasehold.AddWorker(ws, leasehold.WorkFunc[lifecycleArgs](
		func(context.Context, *leasehold.Job[lifecycleArgs]) error { return bad }))
	if err != nil {
		t.Fatalf("AddWorker: %v", err)
	}
	d, c := lifecycleSetup(t, ws)
	if err := c.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	res, err := c.Insert(t.Context(), lifecycleArgs{}, &leasehold.InsertOpts{MaxAttempts: maxAttempts})
	if err != nil {
		t.Fatalf("Insert: %v", err)
	}
	return d, c, res.Job.ID
}

// TestTypedNilErrorOnLastAttemptFails: an attempt whose error panics when
// read is charged to the budget like any failure: on the job's last
// attempt it fails the job, with the panic named, instead of retrying it
// past MaxAttempts.
func TestTypedNilErrorOnLastAttemptFails(t *testing.T) {
	for _, tt := range []struct {
		name string
		bad  error
	}{
		{"Error", (*nilPtrErr)(nil)},
		{"Unwrap", (*nilUnwrapErr)(nil)},
	} {
		t.Run(tt.name, func(t *testing.T) { typedNilErrorOnLastAttemptFails(t, tt.bad) })
	}
}

// typedNilErrorOnLastAttemptFails runs TestTypedNilErrorOnLastAttemptFails
// for the error bad, on a job of one attempt.
func typedNilErrorOnLastAttemptFails(t *testing.T, bad error) {
	d, _, id := runReturning(t, bad, 1)
	deadline := time.Now().Add(30 * time.Second)
	for {
		row, err := d.GetJob(t.Context(), id)
		if err != nil {
			t.Fatalf("GetJob: %v", err)
		}
		if row.Attempt >= 1 && row.State != leasehold.StateProcessing {
			if row.State != leasehold.StateFailed || row.Attempt != 1 {
				t.Fatalf("job of MaxAttempts 1 after a typed nil error: %s at attempt %d; want failed at attempt 1", row.State, row.Attempt)
			}
			if !strings.Contains(row.LastError, "panic while reading the handler's error") {
				t.Fatalf("last error %q; want the panic named", row.LastError)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("job after a typed nil error: %s attempt %d; want failed at attempt 1", row.State, row.Attempt)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestGoexitInHandlerEndsTheAttempt: a handler that ends its goroutine
// with runtime.Goexit (as t.FailNow does) ends its attempt as a failure
// naming it, instead of leaving its lease renewed with no handler behind it.
func TestGoexitInHandlerEndsTheAttempt(t *testing.T) {
	ws := leasehold.NewWorkers()
	err := leasehold.AddWorker(ws, leasehold.WorkFunc[lifecycleArgs](
		func(context.Context, *leasehold.Job[lifecycleArgs]) error {
			runtime.Goexit()
			return nil
		}))
	if err != nil {
		t.Fatalf("AddWorker: %v", err)
	}
	d, c := lifecycleSetup(t, ws)
	if err := c.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	res, err := c.Insert(t.Context(), lifecycleArgs{}, &leasehold.InsertOpts{MaxAttempts: 1})
	if err != nil {
		t.Fatalf("Insert: %v", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		row, err := d.GetJob(t.Context(), res.Job.ID)
		if err != nil {
			t.Fatalf("GetJob: %v", err)
		}
		if row.State == leasehold.StateFailed {
			if !strings.Contains(row.LastError, "Goexit") {
				t.Fatalf("last error %q; want the Goexit named", row.LastError)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("job whose handler called Goexit: %s attempt %d; want failed", row.State, row.Attempt)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
