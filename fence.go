package leasehold

import (
	"context"
	"fmt"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/engine"
)

// FenceTx asserts, inside the caller's business transaction tx, that the
// lease of the job whose handler received ctx is still held: the job is
// processing under this client's lease at the same attempt, and the lease
// has not expired by the database clock at the moment of the check
// (clock_timestamp() on PostgreSQL, not the transaction's start). It
// locks the job row (SELECT … FOR UPDATE on PostgreSQL; SQLite's write
// transaction holds every row), so no takeover can commit between the
// check and tx's commit: the business writes in tx commit only while the
// lease is held, and a worker that took the job over sees them.
//
// It returns an error wrapping ErrLeaseLost when the lease was taken
// over, finished or has expired: roll tx back then. Once ctx is done it
// reaches no database and returns an error wrapping context.Cause(ctx):
// ErrLeaseLost (or ErrLeaseNotRenewed, which wraps it) for a lease the
// client found lost or gave up. It returns
// ErrUnsupportedTx for a nil tx or one the driver does not accept (the
// same types as CompleteTx), and ErrNotInHandler when ctx does not come
// from a running handler. A nil tx is reported first; whether the driver
// accepts tx's type is known only from a handler's ctx, which names the
// client, so outside a handler a foreign tx gets ErrNotInHandler.
//
// While tx holds the row, this lease cannot be renewed. On PostgreSQL
// the client's heartbeat skips the locked row and renews its other
// leases; on SQLite tx holds the write lock, and every write of the
// process, heartbeats included, waits until tx ends. Call FenceTx as the
// last step of a short transaction, right before its commit: one held
// past the lease's safe window loses the lease.
func FenceTx(ctx context.Context, tx any) error {
	if err := checkCallerTx(tx); err != nil {
		return err
	}
	c, l, err := handlerLease(ctx, "FenceTx")
	if err != nil {
		return err
	}
	if err := leaseGone(ctx, l); err != nil {
		return fmt.Errorf("leasehold: fence: %w", err)
	}
	err = c.driver.FenceTx(ctx, tx, c.fenceOf(l))
	if err != nil {
		return fmt.Errorf("leasehold: fence job %d attempt %d: %w", l.Row.ID, l.Row.Attempt, err)
	}
	return nil
}

// leaseGone returns why a fenced call for lease l must not reach the
// database, or nil: an error wrapping ErrLeaseLost when the database
// already said the lease is no longer this client's, or one wrapping
// context.Cause(ctx) when ctx is done. The cause is what the caller needs:
// a handler's context ends with ErrLeaseLost when the heartbeat finds the
// lease taken over, ErrLeaseNotRenewed when the watchdog gives it up, and
// Stop's cause when the client releases it, which a driver's "context
// canceled" would hide; a caller's own cancel stays context.Canceled. A
// lease whose safe window merely passed on the client's clock is not
// refused here: the database's fence decides that one.
func leaseGone(ctx context.Context, l *engine.Lease) error {
	if l.LostInDB() {
		return fmt.Errorf("%w: job %d attempt %d: taken over", ErrLeaseLost, l.Row.ID, l.Row.Attempt)
	}
	if ctx.Err() != nil {
		return fmt.Errorf("job %d attempt %d: %w", l.Row.ID, l.Row.Attempt, context.Cause(ctx))
	}
	return nil
}

// handlerLease returns the client and the lease of the running handler
// whose context is ctx; fn names the caller.
func handlerLease(ctx context.Context, fn string) (*Client, *engine.Lease, error) {
	c, l := ClientFromContext(ctx), engine.FromContext(ctx)
	if c == nil || l == nil {
		return nil, nil, fmt.Errorf("%w: %s needs the context of a running handler", ErrNotInHandler, fn)
	}
	return c, l, nil
}

// fenceOf is the fencing token of l, a lease of c.
func (c *Client) fenceOf(l *engine.Lease) *driver.FenceParams {
	return &driver.FenceParams{ID: l.Row.ID, Owner: c.owner, Attempt: l.Row.Attempt}
}
