package sqlitedriver

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"slices"

	"github.com/leasehold/leasehold/driver"
)

// The statements that apply transitions (driver.Transition) write the
// columns the transition names, as given, and nothing else: the state
// machine is the engine's, so no statement here knows an outcome's name.
// One rule lives here, because only the row knows it (see
// driver.Transition): a job whose cancel an operator requested while it
// ran becomes cancelled, finished, where the transition would make it
// pending or stuck; its history row then records the transition's
// cancelled outcome, and the statement returns cancel_requested, from
// which Finish reports it cancelled (driver.FinishResult). ?1 is now. The
// SET expressions see the old row, as in PostgreSQL.

// applySQL applies the transitions in ?2, a JSON array of finishEntries
// ([id, attempt, owner, state, keep_run_at, delay µs, free, keep_error,
// error, finished, outcome, attempt_error] and, when the transition has
// one that differs from its outcome, cancelled_outcome, which only the
// history statements read), fenced by (id, attempt, owner, status).
// Callers add their fence, if any, and the RETURNING clause
// (finishReturning).
// The unary + on status keeps the planner from scanning leasehold_jobs_leases
// for every lease: it loops over the JSON array and looks each job up by id.
const applySQL = `UPDATE leasehold_jobs SET
    status = CASE WHEN cancel_requested AND r.state IN ('pending', 'stuck') THEN 'cancelled' ELSE r.state END,
    run_at = CASE WHEN r.keep_run_at THEN run_at ELSE ?1 + r.delay END,
    free_attempts = free_attempts + r.free,
    finished_at = CASE WHEN r.finished OR (cancel_requested AND r.state IN ('pending', 'stuck')) THEN ?1 END,
    last_error = CASE WHEN r.keep_error THEN last_error ELSE NULLIF(r.err, '') END,
    lease_owner = NULL, lease_until = NULL
FROM (SELECT value->>0 AS rid, value->>1 AS ratt, value->>2 AS rowner, value->>3 AS state,
        value->>4 AS keep_run_at, value->>5 AS delay, value->>6 AS free, value->>7 AS keep_error,
        value->>8 AS err, value->>9 AS finished FROM json_each(?2)) AS r
WHERE leasehold_jobs.id = r.rid AND leasehold_jobs.attempt = r.ratt
  AND leasehold_jobs.lease_owner = r.rowner AND +leasehold_jobs.status = 'processing'`

// finishReturning ends the statements that apply transitions: the
// attempt of each job updated, and its cancel_requested (which no finish
// changes), for appliedResults.
const finishReturning = `
RETURNING id, attempt, cancel_requested`

// finishSQL applies the transitions of a batch of leases (see applySQL).
const finishSQL = applySQL + finishReturning

// Finish applies the fenced transitions of ps (WHERE id, attempt,
// lease_owner and status 'processing' match) and writes the history rows
// of the attempts they end, in
// tx (a *sql.Tx on this database file) when non-nil, else in one transaction of
// its own. It returns the jobs whose fence matched, in the order of ps,
// each cancelled or not by the cancel rule; the others are unchanged. A
// batch may hold several entries for one job (a stale attempt and the
// current one): only the entry whose fence matches is applied; of
// entries with the same fence, the first.
//
// A batch of one owner and one transition is written with uniformSQL's
// statements; a batch of several, as its groups of at least minGroup
// leases of one owner and one transition written so, and the rest with
// applySQL (finishSplit).
func (d *Driver) Finish(ctx context.Context, tx any, ps []*driver.FinishParams) ([]driver.FinishResult, error) {
	t, err := asTx(tx)
	if err != nil {
		return nil, err
	}
	if len(ps) == 0 {
		return nil, nil
	}
	if err := driver.ValidateFinish(ps); err != nil {
		return nil, fmt.Errorf("sqlitedriver: finish: %w", err)
	}
	if driver.Uniform(ps) {
		return d.finishUniform(ctx, t, ps)
	}
	if groups, rest := splitUniform(ps); len(groups) > 0 {
		return d.finishSplit(ctx, t, ps, groups, rest)
	}
	entries := finishEntries(ps)
	arr, err := jsonParam(entries)
	if err != nil {
		return nil, err
	}
	var done []driver.FinishResult
	err = d.withTx(ctx, t, func(ctx context.Context, tx *sql.Tx, now int64) error {
		matched, err := d.apply(ctx, tx, finishSQL, endFinishedSQL, now, arr)
		done = appliedResults(ps, matched)
		return err
	}, endFinishedSQL, finishSQL)
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

// finishEntries returns one JSON entry per distinct fence of ps, in the
// shape of applySQL, in id order (see leasePairs).
func finishEntries(ps []*driver.FinishParams) [][]any {
	seen := make(map[fence]bool, len(ps))
	entries := make([][]any, 0, len(ps))
	for _, p := range ps {
		f := fence{p.ID, p.Attempt, p.Owner}
		if seen[f] {
			continue
		}
		seen[f] = true
		t := p.Transition
		e := []any{p.ID, p.Attempt, p.Owner, string(t.State), flag(t.KeepRunAt),
			micros(t.Delay), flag(t.FreeAttempt), flag(t.KeepLastError), t.LastError, flag(t.Finished),
			string(t.Outcome), t.AttemptError}
		if c := t.OutcomeWhenCancelled(); c != t.Outcome {
			e = append(e, string(c))
		}
		entries = append(entries, e)
	}
	slices.SortStableFunc(entries, func(x, y []any) int { return cmp.Compare(x[0].(int64), y[0].(int64)) })
	return entries
}

// flag is b as SQLite stores a boolean.
func flag(b bool) int {
	if b {
		return 1
	}
	return 0
}

// apply writes, with history (endFinishedSQL or endRescuedSQL), the
// history rows of the entries in arr whose fence matches, then applies
// them with query (finishSQL or rescueApplySQL, the same fence), in tx.
// It returns what it updated of each job (see finishJobs).
func (d *Driver) apply(ctx context.Context, tx *sql.Tx, query, history string, now int64, arr string) (map[int64]updated, error) {
	if _, err := d.exec(ctx, tx, history, now, arr); err != nil {
		return nil, fmt.Errorf("sqlitedriver: end finished attempts: %w", err)
	}
	return d.finishJobs(ctx, tx, query, now, arr)
}

// updated is what a statement that applies transitions returns of one
// job it updated (finishReturning).
type updated struct {
	attempt         int
	cancelRequested bool
}

// finishJobs runs query (finishSQL, uniformSQL's or rescueApplySQL)
// with args and returns, by job, the attempt it updated and the job's
// cancel_requested.
func (d *Driver) finishJobs(ctx context.Context, tx *sql.Tx, query string, args ...any) (map[int64]updated, error) {
	rows, err := d.query(ctx, tx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlitedriver: finish: %w", err)
	}
	defer rows.Close()
	matched := make(map[int64]updated)
	for rows.Next() {
		var id int64
		var u updated
		if err := rows.Scan(&id, &u.attempt, &u.cancelRequested); err != nil {
			return nil, fmt.Errorf("sqlitedriver: finish: %w", err)
		}
		matched[id] = u
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlitedriver: finish: %w", err)
	}
	return matched, nil
}

// appliedResults returns the jobs of ps whose (id, attempt) is in
// matched, once each, in the order of ps: cancelled when the job's cancel
// was requested and its transition is one the cancel rule turns into
// cancelled (driver.Transition.Cancellable).
func appliedResults(ps []*driver.FinishParams, matched map[int64]updated) []driver.FinishResult {
	done := make([]driver.FinishResult, 0, len(matched))
	reported := make(map[int64]bool, len(matched))
	for _, p := range ps {
		if u, ok := matched[p.ID]; ok && u.attempt == p.Attempt && !reported[p.ID] {
			reported[p.ID] = true
			done = append(done, driver.FinishResult{ID: p.ID, Cancelled: u.cancelRequested && p.Cancellable()})
		}
	}
	return done
}
