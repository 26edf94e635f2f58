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
// and turns a panic in either into a *PanicError.
func (c *Client) runHandler(ctx context.Context, row *JobRow) (err error) {
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

// classify turns a handler's error into the attempt's outcome: the
// client's policy of permanent errors, snoozes, cancels and retries, with
// the retry policy of the job's kind. A *TimeoutError is an error like any
// other: retried, or failed once the budget is spent.
func (c *Client) classify(row *JobRow, err error) statemachine.Ending {
	var (
		perm   *PermanentError
		snooze *SnoozeError
		cancel *CancelError
	)
	res := statemachine.Ending{Error: errorText(err)}
	switch {
	case errors.As(err, &snooze):
		res = statemachine.Ending{Outcome: OutcomeSnoozed, Delay: snooze.Delay}
	case errors.As(err, &cancel):
		res.Outcome = OutcomeCancelled
	case errors.As(err, &perm):
		res.Outcome = OutcomeFailed
	case row.ChargedAttempts() >= row.MaxAttempts:
		res.Outcome = OutcomeFailed
	default:
		res.Outcome, res.Delay = OutcomeRetried, c.retryPolicy(row).NextRetry(row, err)
	}
	return res
}
