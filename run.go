package leasehold

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"

	"github.com/leasehold/leasehold/internal/statemachine"
)

type clientKey struct{}

// ClientFromContext returns the client running the job whose handler
// received ctx, for calls such as CompleteTx; nil outside a handler. The
// drivers' typed completion functions (pgdriver.CompleteTx,
// sqlitedriver.CompleteTx) find the client this way.
func ClientFromContext(ctx context.Context) *Client {
	c, _ := ctx.Value(clientKey{}).(*Client)
	return c
}

// runHandler runs the handler of row's kind through the work middleware,
// and turns a panic in either into a *PanicError. Once the handler has
// returned, it marks the lease so (a resolution made under it from then
// on is refused) and reports the resolutions the handler made in
// transactions that committed (reportTxResolutions).
func (c *Client) runHandler(ctx context.Context, row *JobRow) (err error) {
	defer c.reportTxResolutions(ctx)
	defer func() {
		if v := recover(); v != nil {
			c.events.stats.panics.Add(1)
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	h := c.cfg.Workers.lookup(row.Kind)
	if h == nil {
		return fmt.Errorf("%w: %s", ErrUnknownKind, row.Kind)
	}
	return c.work(ctx, row, h)
}

// classifyPanic is the ending of an attempt whose error panicked while
// classify read it (its Error method, as a typed nil pointer's does) or
// whose retry policy panicked: a failure like a handler's panic, retried
// with the default backoff while the budget lasts, so that one such job
// cannot take the process and every lease it holds down with it.
func (c *Client) classifyPanic(row *JobRow, p any) statemachine.Ending {
	c.events.stats.panics.Add(1)
	end := statemachine.Ending{Outcome: OutcomeFailed,
		Error: fmt.Sprintf("panic while reading the handler's error or its retry policy: %v", p)}
	if row.ChargedAttempts() < row.MaxAttempts {
		end.Outcome, end.Delay = OutcomeRetried, DefaultRetryPolicy().NextRetry(row, nil)
	}
	return c.reconcilerEnding(row, end)
}

// giveUp is the ending of an attempt whose lease the watchdog gave up: none
// in a queue that flags or reconciles expired leases (the handler may have
// been cut off mid-effect, so the watcher must apply that policy once the
// lease runs out, as for a crashed worker); failed once the retry budget is
// spent; otherwise lease_lost, pending again.
func (c *Client) giveUp(row *JobRow) (statemachine.Ending, bool) {
	if q := c.cfg.Queues[row.Queue]; q.FlagStuck || q.Reconcile != nil {
		return statemachine.Ending{}, false
	}
	end := statemachine.Ending{Outcome: OutcomeLeaseLost, Error: leaseGivenUp}
	if row.ChargedAttempts() >= row.MaxAttempts {
		end.Outcome = OutcomeFailed
	}
	return c.reconcilerEnding(row, end), true
}

// reconcilerEnding flags the ending of a reconcile job that would fail or
// cancel it (its budget spent, a permanent error, a cancel it returned):
// the job becomes stuck instead, for an operator to run it again or to
// settle the job it reconciles, which nothing else would ever decide. A
// reconcile job is known by its row (c.reconciler), so a client that
// works the reconcile queue without the policy naming its kind flags it
// too. An operator's cancel is not classified here and still cancels it.
func (c *Client) reconcilerEnding(row *JobRow, end statemachine.Ending) statemachine.Ending {
	if c.reconciler(row) {
		end.Flag = true // Finish applies it to failed and cancelled only
	}
	return end
}

// leaseGivenUp is the error recorded for an attempt whose lease the
// watchdog gave up.
const leaseGivenUp = "lease not renewed in time; worker gave it up"

// classify turns a handler's error into the attempt's outcome: the
// client's policy of permanent errors, snoozes, cancels and retries, with
// the retry policy of the job's kind. A *TimeoutError is an error like any
// other: retried, or failed once the budget is spent.
func (c *Client) classify(row *JobRow, err error) (end statemachine.Ending) {
	defer func() {
		if p := recover(); p != nil {
			end = c.classifyPanic(row, p)
		}
	}()
	var (
		perm   *PermanentError
		snooze *SnoozeError
		cancel *CancelError
	)
	res := statemachine.Ending{Error: errorText(err)}
	switch {
	case errors.As(err, &snooze):
		res = statemachine.Ending{Outcome: OutcomeSnoozed, Delay: snooze.delay()}
	case errors.As(err, &cancel):
		res.Outcome = OutcomeCancelled
	case errors.As(err, &perm):
		res.Outcome = OutcomeFailed
	case row.ChargedAttempts() >= row.MaxAttempts:
		res.Outcome = OutcomeFailed
	default:
		res.Outcome, res.Delay = OutcomeRetried, max(c.retryPolicy(row).NextRetry(row, err), 0)
	}
	return c.reconcilerEnding(row, res)
}
