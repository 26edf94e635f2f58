package leasehold_test

import (
	"context"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
)

// nilPtrErr is an error type whose Error method dereferences its receiver,
// so a typed nil *nilPtrErr returned as an error panics when read.
type nilPtrErr struct{ msg string }

func (e *nilPtrErr) Error() string { return e.msg }

// TestTypedNilErrorIsAFailure: a handler that returns a typed nil pointer
// as its error (an error whose Error method panics) does not take the
// process down: the attempt is recorded as a failure that names the panic,
// retried while the budget lasts, and counted in Stats.Panics.
func TestTypedNilErrorIsAFailure(t *testing.T) {
	ws := leasehold.NewWorkers()
	err := leasehold.AddWorker(ws, leasehold.WorkFunc[lifecycleArgs](
		func(context.Context, *leasehold.Job[lifecycleArgs]) error {
			var e *nilPtrErr
			return e
		}))
	if err != nil {
		t.Fatalf("AddWorker: %v", err)
	}
	d, c := lifecycleSetup(t, ws)
	if err := c.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	res, err := c.Insert(t.Context(), lifecycleArgs{}, &leasehold.InsertOpts{MaxAttempts: 2})
	if err != nil {
		t.Fatalf("Insert: %v", err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		row, err := d.GetJob(t.Context(), res.Job.ID)
		if err != nil {
			t.Fatalf("GetJob: %v", err)
		}
		if row.State == leasehold.StatePending && row.Attempt == 1 {
			if !strings.Contains(row.LastError, "panic while reading the handler's error") {
				t.Fatalf("last error %q; want the panic named", row.LastError)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("job after a typed nil error: %s attempt %d; want pending, attempt 1 retried", row.State, row.Attempt)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if p := c.Stats().Panics; p != 1 {
		t.Fatalf("Stats().Panics = %d, want 1", p)
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
