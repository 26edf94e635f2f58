package sqlitedriver

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// finishSQL applies the fenced outcomes in ?2, a JSON array of
// [id, attempt, owner, outcome, delay µs, error]; ?1 is now. The SET
// expressions see the old row, as in PostgreSQL.
// The unary + on status keeps the planner from scanning leasehold_jobs_leases
// for every lease: it loops over the JSON array and looks each job up by id.
const finishSQL = `UPDATE leasehold_jobs SET
    status = CASE r.outcome WHEN 'completed' THEN 'completed' WHEN 'failed' THEN 'failed'
        WHEN 'cancelled' THEN 'cancelled' ELSE 'pending' END,
    run_at = CASE WHEN r.outcome IN ('retried', 'snoozed') THEN ?1 + r.delay ELSE run_at END,
    free_attempts = free_attempts + (r.outcome IN ('snoozed', 'released')),
    finished_at = CASE WHEN r.outcome IN ('completed', 'failed', 'cancelled') THEN ?1
        ELSE finished_at END,
    last_error = CASE WHEN r.outcome IN ('retried', 'failed', 'lease_lost') THEN NULLIF(r.err, '')
        WHEN r.outcome = 'cancelled' AND r.err <> '' THEN r.err ELSE last_error END,
    lease_owner = NULL, lease_until = NULL
FROM (SELECT value->>0 AS rid, value->>1 AS ratt, value->>2 AS rowner, value->>3 AS outcome,
        value->>4 AS delay, value->>5 AS err FROM json_each(?2)) AS r
WHERE leasehold_jobs.id = r.rid AND leasehold_jobs.attempt = r.ratt
  AND leasehold_jobs.lease_owner = r.rowner AND +leasehold_jobs.status = 'processing'
RETURNING id, attempt`

// endFinishedSQL ends the attempts of the finished leases in ?2 (same JSON
// shape as finishSQL), copying the job's last heartbeat. The owner check
// picks the entry whose fence matched when a batch holds several entries
// for one (id, attempt).
const endFinishedSQL = `UPDATE leasehold_attempts SET ended_at = ?1, outcome = r.outcome,
    error = NULLIF(r.err, ''),
    heartbeat_at = (SELECT j.heartbeat_at FROM leasehold_jobs AS j WHERE j.id = r.rid)
FROM (SELECT value->>0 AS rid, value->>1 AS ratt, value->>2 AS rowner, value->>3 AS outcome,
        value->>5 AS err FROM json_each(?2)) AS r
WHERE leasehold_attempts.job_id = r.rid AND leasehold_attempts.attempt = r.ratt
  AND leasehold_attempts.owner = r.rowner AND leasehold_attempts.ended_at IS NULL`

// finishOutcomes are the outcomes Finish accepts.
var finishOutcomes = map[leasehold.Outcome]bool{
	leasehold.OutcomeCompleted: true, leasehold.OutcomeRetried: true,
	leasehold.OutcomeFailed: true, leasehold.OutcomeSnoozed: true,
	leasehold.OutcomeReleased: true, leasehold.OutcomeCancelled: true,
	leasehold.OutcomeLeaseLost: true,
}

// Finish applies fenced outcomes (WHERE id, attempt, lease_owner and status
// 'processing' match) and ends their attempts, in tx (a *sql.Tx of this
// database) when non-nil, else in one transaction of its own. It returns the
// ids whose fence matched, in the order of ps; the others are unchanged.
// A batch may hold several entries for one job (a stale attempt and the
// current one): only the entry whose fence matches is applied; of entries
// with the same fence, the first.
func (d *Driver) Finish(ctx context.Context, tx any, ps []*driver.FinishParams) ([]int64, error) {
	t, err := asTx(tx)
	if err != nil {
		return nil, err
	}
	if len(ps) > 0 && allCompleted(ps) {
		return d.finishCompleted(ctx, t, ps)
	}
	entries, err := finishEntries(ps)
	if err != nil || len(entries) == 0 {
		return nil, err
	}
	arr, err := jsonParam(entries)
	if err != nil {
		return nil, err
	}
	var done []int64
	err = d.withTx(ctx, t, func(ctx context.Context, tx *sql.Tx, now int64) error {
		var err error
		done, err = d.finish(ctx, tx, now, arr, entries, ps)
		return err
	}, finishSQL, endFinishedSQL)
	if err != nil {
		return nil, err
	}
	return done, nil
}

// fence is the fencing token of one lease.
type fence struct {
	id      int64
	attempt int
	owner   string
}

// finishEntries validates ps and returns one JSON entry per distinct fence.
func finishEntries(ps []*driver.FinishParams) ([][]any, error) {
	seen := make(map[fence]bool, len(ps))
	entries := make([][]any, 0, len(ps))
	for _, p := range ps {
		if !finishOutcomes[p.Outcome] {
			return nil, fmt.Errorf("sqlitedriver: finish job %d: unknown outcome %q", p.ID, p.Outcome)
		}
		f := fence{p.ID, p.Attempt, p.Owner}
		if seen[f] {
			continue
		}
		seen[f] = true
		entries = append(entries, []any{p.ID, p.Attempt, p.Owner, string(p.Outcome), micros(p.Delay), p.Error})
	}
	return entries, nil
}

// finish is Finish inside its transaction; entries are those of ps. At
// most one entry per job can match its fence, so the job ids and attempts
// finishSQL returns, with the owner recorded in the attempt row, identify
// the entries applied.
func (d *Driver) finish(ctx context.Context, tx *sql.Tx, now int64, arr string, entries [][]any, ps []*driver.FinishParams) ([]int64, error) {
	matched, err := d.finishJobs(ctx, tx, finishSQL, now, arr)
	if err != nil || len(matched) == 0 {
		return nil, err
	}
	kept := make([][]any, 0, len(matched))
	for _, e := range entries {
		if att, ok := matched[e[0].(int64)]; ok && att == e[1].(int) {
			kept = append(kept, e)
		}
	}
	keptJSON, err := jsonParam(kept)
	if err != nil {
		return nil, err
	}
	if _, err := d.exec(ctx, tx, endFinishedSQL, now, keptJSON); err != nil {
		return nil, fmt.Errorf("sqlitedriver: end finished attempts: %w", err)
	}
	return appliedIDs(ps, matched), nil
}

// finishJobs runs query (finishSQL or finishCompletedSQL) with args and
// returns the attempt of each job it updated.
func (d *Driver) finishJobs(ctx context.Context, tx *sql.Tx, query string, args ...any) (map[int64]int, error) {
	rows, err := d.query(ctx, tx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlitedriver: finish: %w", err)
	}
	defer rows.Close()
	matched := make(map[int64]int)
	for rows.Next() {
		var id int64
		var attempt int
		if err := rows.Scan(&id, &attempt); err != nil {
			return nil, fmt.Errorf("sqlitedriver: finish: %w", err)
		}
		matched[id] = attempt
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlitedriver: finish: %w", err)
	}
	return matched, nil
}

// appliedIDs returns the ids of ps whose (id, attempt) is in matched, once
// each, in the order of ps.
func appliedIDs(ps []*driver.FinishParams, matched map[int64]int) []int64 {
	done := make([]int64, 0, len(matched))
	reported := make(map[int64]bool, len(matched))
	for _, p := range ps {
		if a, ok := matched[p.ID]; ok && a == p.Attempt && !reported[p.ID] {
			reported[p.ID] = true
			done = append(done, p.ID)
		}
	}
	return done
}
