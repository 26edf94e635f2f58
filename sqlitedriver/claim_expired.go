package sqlitedriver

import (
	"context"
	"database/sql"
	"fmt"
)

// anyExpiredSQL reports whether any lease, of any queue, expired before
// ?1: one seek in leasehold_jobs_leases.
const anyExpiredSQL = `SELECT EXISTS (SELECT 1 FROM leasehold_jobs
    WHERE status = 'processing' AND lease_until < ?1)`

// claimQuery returns the statement of a claim at now in tx: the one that
// takes over expired leases (after endTakenOverSQL) when takeOver is set
// and some lease has expired, else the one that claims pending jobs only.
// With no expired lease the two claim the same jobs, and the second saves
// ending no attempt, the search for takeover candidates and the sort of
// the union, which in a drain cost a third of the claim. tx holds the
// write lock, so no lease can expire unseen between this check and the
// claim: both read the clock once, at now.
func (d *Driver) claimQuery(ctx context.Context, tx *sql.Tx, takeOver bool, now int64) (string, error) {
	if !takeOver {
		return claimSQLPending, nil
	}
	var expired bool
	if err := d.queryRow(ctx, tx, anyExpiredSQL, now).Scan(&expired); err != nil {
		return "", fmt.Errorf("sqlitedriver: look for expired leases: %w", err)
	}
	if expired {
		return claimSQLTakeOver, nil
	}
	return claimSQLPending, nil
}
