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
// (?2 id, ?3 owner, ?4 attempt) is held and has not expired at ?1, the
// database clock read in the transaction at the moment of the check. It
// writes the row without changing it, so that the transaction holds the
// write lock from then on, even one begun DEFERRED: no other writer, and
// so no takeover, can commit before it ends.
const leaseHeldSQL = `UPDATE leasehold_jobs SET attempt = attempt
WHERE id = ?2 AND status = 'processing' AND lease_owner = ?3 AND attempt = ?4 AND lease_until > ?1
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
	return d.withTx(ctx, t, func(ctx context.Context, tx *sql.Tx, now int64) error {
		return d.leaseHeld(ctx, tx, now, p)
	})
}

// leaseHeld runs leaseHeldSQL for p at now in tx; ErrLeaseLost when the
// lease is not held.
func (d *Driver) leaseHeld(ctx context.Context, tx *sql.Tx, now int64, p *driver.FenceParams) error {
	var id int64
	err := d.queryRow(ctx, tx, leaseHeldSQL, now, p.ID, p.Owner, p.Attempt).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%w: job %d attempt %d owner %s (taken over, finished or expired)",
			leasehold.ErrLeaseLost, p.ID, p.Attempt, p.Owner)
	}
	if err != nil {
		return fmt.Errorf("sqlitedriver: fence: %w", err)
	}
	return nil
}
