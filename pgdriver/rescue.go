package pgdriver

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
	leasehold "github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// selectExpiredSQL locks up to $1 processing jobs whose lease expired,
// oldest lease first. SKIP LOCKED makes concurrent watchers harmless: each
// takes jobs the others do not hold.
const selectExpiredSQL = `SELECT ` + jobColumns + ` FROM leasehold_jobs
WHERE status = 'processing' AND lease_until < now()
ORDER BY lease_until, id
LIMIT $1::int
FOR UPDATE SKIP LOCKED`

// rescueApplySQL is finishSQL fenced by the lease still being expired as
// well, so that it writes nothing for a lease renewed since it was read.
const rescueApplySQL = applyHead + `
		AND j.lease_until < statement_timestamp()` + applyTail

// RescueExpired locks up to p.Limit (default driver.DefaultRescueLimit)
// processing jobs whose lease expired, asks p.Decide for the transition of
// each and applies them fenced, ending their history rows, in one
// transaction.
func (d *Driver) RescueExpired(ctx context.Context, p *driver.RescueParams) ([]*leasehold.RescuedJob, error) {
	limit, err := driver.RescueLimit(p)
	if err != nil {
		return nil, fmt.Errorf("pgdriver: rescue expired: %w", err)
	}
	var out []*leasehold.RescuedJob
	err = pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		var err error
		out, err = d.rescue(ctx, pgxQuerier{tx}, limit, p.Decide)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("pgdriver: rescue expired: %w", err)
	}
	return out, nil
}

// rescue is RescueExpired inside its transaction.
func (d *Driver) rescue(ctx context.Context, q querier, limit int, decide func(*leasehold.JobRow) driver.Transition) ([]*leasehold.RescuedJob, error) {
	jobs, err := collect(ctx, q, newJobScan(&d.names).scan, selectExpiredSQL, limit)
	if err != nil || len(jobs) == 0 {
		return nil, err
	}
	ps, err := driver.RescueWrites(jobs, decide)
	if err != nil {
		return nil, err
	}
	done, err := d.apply(ctx, q, rescueApplySQL, ps)
	if err != nil {
		return nil, err
	}
	return driver.Rescued(jobs, ps, done), nil
}
