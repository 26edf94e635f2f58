package sqlitedriver

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"

	"github.com/leasehold/leasehold/driver"
)

// finishUniformSQL is finishSQL for the common batch: one transition for
// every lease, every lease of one owner (?3). ?2 is a JSON array of
// [id, attempt]; the transition's fields are ?4 state, ?5 keep_run_at,
// ?6 delay µs, ?7 free, ?8 keep_error, ?9 error, ?10 finished. It writes
// the same columns with the same fence, and saves parsing ten more fields
// of every entry.
const finishUniformSQL = `UPDATE leasehold_jobs SET
    status = ?4,
    run_at = CASE WHEN ?5 THEN run_at ELSE ?1 + ?6 END,
    free_attempts = free_attempts + ?7,
    finished_at = CASE WHEN ?10 THEN ?1 END,
    last_error = CASE WHEN ?8 THEN last_error ELSE NULLIF(?9, '') END,
    lease_owner = NULL, lease_until = NULL
FROM (SELECT value->>0 AS rid, value->>1 AS ratt FROM json_each(?2)) AS r
WHERE leasehold_jobs.id = r.rid AND leasehold_jobs.attempt = r.ratt
  AND leasehold_jobs.lease_owner = ?3 AND +leasehold_jobs.status = 'processing'
RETURNING id, attempt`

// endUniformSQL ends the attempts in ?2 (the [id, attempt] entries whose
// fence matched) with outcome ?3 and error ?4, copying the job's last
// heartbeat.
const endUniformSQL = `UPDATE leasehold_attempts SET ended_at = ?1, outcome = ?3, error = NULLIF(?4, ''),
    heartbeat_at = (SELECT j.heartbeat_at FROM leasehold_jobs AS j WHERE j.id = r.rid)
FROM (SELECT value->>0 AS rid, value->>1 AS ratt FROM json_each(?2)) AS r
WHERE leasehold_attempts.job_id = r.rid AND leasehold_attempts.attempt = r.ratt
  AND leasehold_attempts.ended_at IS NULL`

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

// finishUniform is Finish for a batch driver.Uniform accepts.
func (d *Driver) finishUniform(ctx context.Context, t *sql.Tx, ps []*driver.FinishParams) ([]int64, error) {
	all := leasePairs(ps, func(int64, int) bool { return true })
	tr := ps[0].Transition
	var done []int64
	err := d.withTx(ctx, t, func(ctx context.Context, tx *sql.Tx, now int64) error {
		matched, err := d.finishJobs(ctx, tx, finishUniformSQL, now, all, ps[0].Owner,
			string(tr.State), flag(tr.KeepRunAt), micros(tr.Delay), flag(tr.FreeAttempt),
			flag(tr.KeepLastError), tr.LastError, flag(tr.Finished))
		if err != nil || len(matched) == 0 {
			return err
		}
		applied := func(id int64, attempt int) bool { a, ok := matched[id]; return ok && a == attempt }
		_, err = d.exec(ctx, tx, endUniformSQL, now, leasePairs(ps, applied), string(tr.Outcome), tr.AttemptError)
		if err != nil {
			return fmt.Errorf("sqlitedriver: end finished attempts: %w", err)
		}
		done = appliedIDs(ps, matched)
		return nil
	}, finishUniformSQL, endUniformSQL)
	if err != nil {
		return nil, err
	}
	return done, nil
}
