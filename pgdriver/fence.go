package pgdriver

import (
	"context"
	"fmt"

	leasehold "github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// leaseHeldSQL is the fence of FenceTx, Checkpoint and Resolve: the lease
// ($1 id, $2 owner, $3 attempt) is held and has not expired at this
// moment (clock_timestamp(), not the caller's transaction start). FOR
// UPDATE locks the row until the transaction ends, so that a takeover
// (an UPDATE of the row) waits, and then finds the lease as this
// transaction left it.
//
// The expiry is judged after the lock is won. When another transaction
// holds the row, FOR UPDATE waits for it; if that one ends without
// changing the row, PostgreSQL locks it without evaluating the WHERE
// clause again, so a clock read in it would judge the lease as it was
// before the wait (TestFenceJudgesAfterTheRowLock).
const leaseHeldSQL = `WITH locked AS MATERIALIZED (
	SELECT id, attempt, lease_until FROM leasehold_jobs
	WHERE id = $1 AND status = 'processing' AND lease_owner = $2 AND attempt = $3
	FOR UPDATE
)
SELECT id, attempt FROM locked WHERE lease_until > clock_timestamp()`

// FenceTx checks in tx that the lease p names is held and locks its row
// until tx ends; ErrLeaseLost when it is not held.
func (d *Driver) FenceTx(ctx context.Context, tx any, p *driver.FenceParams) error {
	if tx == nil {
		return fmt.Errorf("%w: FenceTx needs the caller's transaction", leasehold.ErrUnsupportedTx)
	}
	q, err := d.querierFor(tx)
	if err != nil {
		return err
	}
	held, err := collect(ctx, q, scanPair, leaseHeldSQL, p.ID, p.Owner, p.Attempt)
	if err != nil {
		return fmt.Errorf("pgdriver: fence: %w", err)
	}
	if len(held) == 0 {
		return leaseLost(p)
	}
	return nil
}

// leaseLost is ErrLeaseLost for the lease p names.
func leaseLost(p *driver.FenceParams) error {
	return fmt.Errorf("%w: job %d attempt %d owner %s (taken over, finished or expired)",
		leasehold.ErrLeaseLost, p.ID, p.Attempt, p.Owner)
}

// errNotReconciling is ErrNotReconciling for job id at attempt.
func errNotReconciling(id int64, attempt int) error {
	return fmt.Errorf("%w: job %d attempt %d", leasehold.ErrNotReconciling, id, attempt)
}
