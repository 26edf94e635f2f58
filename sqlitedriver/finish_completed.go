package sqlitedriver

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// finishCompletedSQL is finishSQL for the common batch: every outcome
// completed, every lease of one owner (?3). ?2 is a JSON array of
// [id, attempt]. It writes the same columns with the same fence, and saves
// parsing four more fields of every entry and the CASE expressions.
const finishCompletedSQL = `UPDATE leasehold_jobs SET status = 'completed', finished_at = ?1,
    lease_owner = NULL, lease_until = NULL
FROM (SELECT value->>0 AS rid, value->>1 AS ratt FROM json_each(?2)) AS r
WHERE leasehold_jobs.id = r.rid AND leasehold_jobs.attempt = r.ratt
  AND leasehold_jobs.lease_owner = ?3 AND +leasehold_jobs.status = 'processing'
RETURNING id, attempt`

// endCompletedSQL ends the attempts in ?2 (the [id, attempt] entries whose
// fence matched) as completed, copying the job's last heartbeat.
const endCompletedSQL = `UPDATE leasehold_attempts SET ended_at = ?1, outcome = 'completed', error = NULL,
    heartbeat_at = (SELECT j.heartbeat_at FROM leasehold_jobs AS j WHERE j.id = r.rid)
FROM (SELECT value->>0 AS rid, value->>1 AS ratt FROM json_each(?2)) AS r
WHERE leasehold_attempts.job_id = r.rid AND leasehold_attempts.attempt = r.ratt
  AND leasehold_attempts.ended_at IS NULL`

// allCompleted reports whether every outcome of ps is completed, by one
// owner.
func allCompleted(ps []*driver.FinishParams) bool {
	for _, p := range ps {
		if p.Outcome != leasehold.OutcomeCompleted || p.Owner != ps[0].Owner {
			return false
		}
	}
	return true
}

// leasePairs encodes the leases of ps that keep(id, attempt) accepts as a
// JSON array of [id, attempt].
func leasePairs(ps []*driver.FinishParams, keep func(id int64, attempt int) bool) string {
	b := make([]byte, 0, 2+24*len(ps))
	b = append(b, '[')
	for _, p := range ps {
		if !keep(p.ID, p.Attempt) {
			continue
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(b, '[')
		b = strconv.AppendInt(b, p.ID, 10)
		b = append(b, ',')
		b = strconv.AppendInt(b, int64(p.Attempt), 10)
		b = append(b, ']')
	}
	return string(append(b, ']'))
}

// finishCompleted is Finish for a batch allCompleted accepts.
func (d *Driver) finishCompleted(ctx context.Context, t *sql.Tx, ps []*driver.FinishParams) ([]int64, error) {
	all := leasePairs(ps, func(int64, int) bool { return true })
	var done []int64
	err := d.withTx(ctx, t, func(ctx context.Context, tx *sql.Tx, now int64) error {
		matched, err := d.finishJobs(ctx, tx, finishCompletedSQL, now, all, ps[0].Owner)
		if err != nil || len(matched) == 0 {
			return err
		}
		applied := func(id int64, attempt int) bool { a, ok := matched[id]; return ok && a == attempt }
		if _, err := d.exec(ctx, tx, endCompletedSQL, now, leasePairs(ps, applied)); err != nil {
			return fmt.Errorf("sqlitedriver: end finished attempts: %w", err)
		}
		done = appliedIDs(ps, matched)
		return nil
	}, finishCompletedSQL, endCompletedSQL)
	if err != nil {
		return nil, err
	}
	return done, nil
}
