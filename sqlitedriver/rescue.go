package sqlitedriver

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// selectExpiredSQL reads up to ?2 processing jobs whose lease expired
// before ?1, oldest lease first, of the queues in the JSON array ?3 (every
// queue when ?3 is NULL), but for the leases owner ?4 still holds (?5, a
// JSON array of job ids; driver.RescueParams.Held).
const selectExpiredSQL = `SELECT ` + jobCols + ` FROM leasehold_jobs
WHERE status = 'processing' AND lease_until < ?1
	AND (?3 IS NULL OR queue IN (SELECT value FROM json_each(?3)))
	AND NOT coalesce(lease_owner = ?4 AND id IN (SELECT value FROM json_each(?5)), 0)
ORDER BY lease_until, id LIMIT ?2 + 0`

// rescueApplySQL is finishSQL fenced by the lease still being expired as
// well.
const rescueApplySQL = applySQL + ` AND leasehold_jobs.lease_until < ?1` + finishReturning

// RescueExpired reads up to p.Limit (default driver.DefaultRescueLimit)
// processing jobs whose lease expired, asks p.Decide for the transition of
// each and applies them fenced, writing the history rows of the attempts
// they end and inserting the
// reconcile job of each job moved to reconciling, in one BEGIN
// IMMEDIATE transaction: no other writer runs between the read and the
// writes.
func (d *Driver) RescueExpired(ctx context.Context, p *driver.RescueParams) ([]*leasehold.RescuedJob, error) {
	limit, err := driver.RescueLimit(p)
	if err != nil {
		return nil, fmt.Errorf("sqlitedriver: rescue expired: %w", err)
	}
	if p.Queues != nil && len(p.Queues) == 0 {
		return nil, nil
	}
	sel, err := expiredParams(limit, p)
	if err != nil {
		return nil, err
	}
	var rescued []*leasehold.RescuedJob
	err = d.inTx(ctx, func(ctx context.Context, tx *sql.Tx, now int64) error {
		var err error
		rescued, err = d.rescue(ctx, tx, now, sel, p.Decide)
		return err
	}, selectExpiredSQL, endRescuedSQL, rescueApplySQL, insertJobSQL, blockerSQL)
	if err != nil {
		return nil, err
	}
	return rescued, nil
}

// rescue is RescueExpired inside its transaction, reconcile jobs
// included.
func (d *Driver) rescue(ctx context.Context, tx *sql.Tx, now int64, sel []any, decide func(*leasehold.JobRow) driver.Transition) ([]*leasehold.RescuedJob, error) {
	jobs, err := d.expiredJobs(ctx, tx, now, sel)
	if err != nil || len(jobs) == 0 {
		return nil, err
	}
	ps, err := driver.RescueWrites(jobs, decide)
	if err != nil {
		return nil, fmt.Errorf("sqlitedriver: rescue: %w", err)
	}
	entries := finishEntries(ps)
	arr, err := jsonParam(entries)
	if err != nil {
		return nil, err
	}
	matched, err := d.apply(ctx, tx, rescueApplySQL, endRescuedSQL, now, arr)
	if err != nil {
		return nil, err
	}
	done := appliedResults(ps, matched)
	rescued := driver.Rescued(jobs, ps, done)
	spawn, by := driver.Spawned(ps, driver.FinishedIDs(done))
	if len(spawn) == 0 {
		return rescued, nil
	}
	res, err := d.insertAll(ctx, tx, now, spawn)
	if err != nil {
		return nil, fmt.Errorf("sqlitedriver: insert reconcile jobs: %w", err)
	}
	driver.NoteSpawned(rescued, by, res)
	return rescued, nil
}

// expiredParams returns the parameters ?2 to ?5 of selectExpiredSQL for
// a pass of at most limit jobs with p.
func expiredParams(limit int, p *driver.RescueParams) ([]any, error) {
	queues, err := queuesParam(p.Queues)
	if err != nil {
		return nil, err
	}
	held, err := idsParam(p.Held)
	if err != nil {
		return nil, err
	}
	return []any{limit, queues, p.Owner, held}, nil
}

// expiredJobs returns the jobs whose lease expired before now that
// selectExpiredSQL selects with sel (expiredParams).
func (d *Driver) expiredJobs(ctx context.Context, tx *sql.Tx, now int64, sel []any) ([]*leasehold.JobRow, error) {
	rows, err := d.query(ctx, tx, selectExpiredSQL, append([]any{now}, sel...)...)
	if err != nil {
		return nil, fmt.Errorf("sqlitedriver: find expired leases: %w", err)
	}
	return scanJobs(rows)
}

// idsParam is ids as a JSON array, [] when there are none.
func idsParam(ids []int64) (string, error) {
	if len(ids) == 0 {
		return "[]", nil
	}
	return jsonParam(ids)
}

// queuesParam is RescueParams.Queues as selectExpiredSQL's ?3: NULL for
// every queue, else a JSON array.
func queuesParam(queues []string) (any, error) {
	if queues == nil {
		return nil, nil
	}
	return jsonParam(queues)
}
