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
// over, finished or has expired: roll tx back then. It returns
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
	err = c.driver.FenceTx(ctx, tx, c.fenceOf(l))
	if err != nil {
		return fmt.Errorf("leasehold: fence job %d attempt %d: %w", l.Row.ID, l.Row.Attempt, err)
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
