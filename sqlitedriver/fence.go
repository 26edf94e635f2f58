package sqlitedriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// leaseHeldSQL is the fence of FenceTx, Checkpoint and Resolve: the lease
// (?1 id, ?2 owner, ?3 attempt) is held and has not expired. It writes the
// row without changing it, so that the transaction holds the write lock
// from then on, even one begun DEFERRED: no other writer, and so no
// takeover, can commit before it ends. The clock is the statement's own,
// read once it has the write lock: in a caller's DEFERRED transaction the
// statement may wait for the lock (up to the busy timeout), and a clock
// read before the wait would judge the lease as it was then
// (TestFenceJudgesAfterTheWriteLock).
const leaseHeldSQL = `UPDATE leasehold_jobs SET attempt = attempt
WHERE id = ?1 AND status = 'processing' AND lease_owner = ?2 AND attempt = ?3 AND lease_until > ` + nowExpr + `
RETURNING id`

// FenceTx checks in tx that the lease p names is held; ErrLeaseLost when
// it is not.
func (d *Driver) FenceTx(ctx context.Context, tx any, p *driver.FenceParams) error {
	t, err := asTx(tx)
	if err != nil {
		return err
	}
	if t == nil {
		return fmt.Errorf("%w: FenceTx needs the caller's transaction", leasehold.ErrUnsupportedTx)
	}
	return d.withTx(ctx, t, func(ctx context.Context, tx *sql.Tx, _ int64) error {
		return d.leaseHeld(ctx, tx, p)
	})
}

// leaseHeld runs leaseHeldSQL for p in tx; ErrLeaseLost when the lease
// is not held.
func (d *Driver) leaseHeld(ctx context.Context, tx *sql.Tx, p *driver.FenceParams) error {
	var id int64
	err := d.queryRow(ctx, tx, leaseHeldSQL, p.ID, p.Owner, p.Attempt).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%w: job %d attempt %d owner %s (taken over, finished or expired)",
			leasehold.ErrLeaseLost, p.ID, p.Attempt, p.Owner)
	}
	if err != nil {
		return fmt.Errorf("sqlitedriver: fence: %w", err)
	}
	return nil
}
