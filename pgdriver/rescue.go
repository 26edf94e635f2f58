package pgdriver

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	leasehold "github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// selectExpiredSQL locks up to $1 processing jobs whose lease expired,
// oldest lease first, of the queues in $2 (every queue when $2 is NULL),
// but for the leases owner $3 still holds ($4, job ids;
// driver.RescueParams.Held).
// SKIP LOCKED makes concurrent watchers harmless: each takes jobs the
// others do not hold.
const selectExpiredSQL = `SELECT ` + jobColumns + ` FROM leasehold_jobs
WHERE status = 'processing' AND lease_until < now()
	AND ($2::text[] IS NULL OR queue = ANY($2::text[]))
	AND NOT coalesce(lease_owner = $3 AND id = ANY($4::bigint[]), false)
ORDER BY lease_until, id
LIMIT $1::int
FOR UPDATE SKIP LOCKED`

// rescueApplySQL is finishSQL fenced by the lease still being expired as
// well, so that it writes nothing for a lease renewed since it was read.
const rescueApplySQL = applyHead + `
		AND j.lease_until < statement_timestamp()` + applyTail

// RescueExpired locks up to p.Limit (default driver.DefaultRescueLimit)
// processing jobs whose lease expired, asks p.Decide for the transition of
// each and applies them fenced, writing the history row of each attempt
// they end (or ending the open row left by a claim from before migration
// 008) and inserting the reconcile job of each job moved to reconciling,
// in one transaction.
func (d *Driver) RescueExpired(ctx context.Context, p *driver.RescueParams) ([]*leasehold.RescuedJob, error) {
	limit, err := driver.RescueLimit(p)
	if err != nil {
		return nil, fmt.Errorf("pgdriver: rescue expired: %w", err)
	}
	if p.Queues != nil && len(p.Queues) == 0 {
		return nil, nil
	}
	var out []*leasehold.RescuedJob
	err = beginBounded(ctx, d.pool, rescueIdleTimeout, func(tx pgx.Tx) error {
		var err error
		out, err = d.rescue(ctx, tx, limit, p)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("pgdriver: rescue expired: %w", err)
	}
	return out, nil
}

// rescue is RescueExpired, with limit, inside its transaction tx. The
// reconcile jobs of the jobs moved to reconciling are inserted in tx too.
func (d *Driver) rescue(ctx context.Context, tx pgx.Tx, limit int, p *driver.RescueParams) ([]*leasehold.RescuedJob, error) {
	q := pgxQuerier{tx}
	jobs, err := collect(ctx, q, newJobScan(&d.names).scan, selectExpiredSQL, limit, p.Queues, p.Owner, p.Held)
	if err != nil || len(jobs) == 0 {
		return nil, err
	}
	ps, err := driver.RescueWrites(jobs, p.Decide)
	if err != nil {
		return nil, err
	}
	done, err := d.apply(ctx, q, rescueApplySQL, ps)
	if err != nil {
		return nil, err
	}
	rescued := driver.Rescued(jobs, ps, done)
	spawn, by := driver.Spawned(ps, driver.FinishedIDs(done))
	if len(spawn) == 0 {
		return rescued, nil
	}
	res, err := d.Insert(ctx, tx, spawn)
	if err != nil {
		return nil, fmt.Errorf("insert reconcile jobs: %w", err)
	}
	driver.NoteSpawned(rescued, by, res)
	return rescued, nil
}
