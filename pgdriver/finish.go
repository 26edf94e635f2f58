package pgdriver

import (
	"context"
	"fmt"

	"github.com/leasehold/leasehold/driver"
)

// The statements that apply transitions (driver.Transition) write the
// columns the transition names, as given, and nothing else: the state
// machine is the engine's, so no statement here knows an outcome's name.
// One rule lives here, because only the row knows it (see
// driver.Transition): a job whose cancel an operator requested while it
// ran becomes cancelled, finished, where the transition would make it
// pending or stuck; its history row then records the transition's
// CancelledOutcome, and the statement returns the job as cancelled
// (driver.FinishResult), in the same statement.
// statement_timestamp() stands for now because the statement may run in a
// caller's long transaction.
//
// The fence compares an expression of status, not status itself:
//
//	j.status || '' = 'processing'
//
// so that the planner cannot use the partial lease index: it holds a dead
// entry for every job finished since the last vacuum, and a plan that
// scans it (chosen when the statistics say few jobs are processing) makes
// each finish slower than the last. Jobs are looked up by primary key
// whatever the statistics say. Heartbeat does the same.

// applyHead and applyTail make the statement that applies one transition
// per lease ($1 ids; $2 an object keyed by lease, see leaseKeySQL, whose
// values are the finishInputs arrays [owner, state, keep_run_at, delay µs,
// free, keep_error, error, finished, outcome, attempt_error] and, when
// the transition has one that differs from its outcome, cancelled_outcome,
// flags as 0 or 1) and writes the history rows of the attempts it ends
// (endAttemptsSQL). Between them goes the fence beyond (id, status, owner,
// attempt), if any. Positional arrays, rather
// than objects with named fields, keep the input small: its size is most
// of what a mixed finish costs beyond a uniform one.
const (
	applyHead = `WITH done AS (
	` + applyUpdate
	// applyUpdate is applyHead's UPDATE.
	applyUpdate = `UPDATE leasehold_jobs j SET
		(status, run_at, finished_at, free_attempts, last_error, lease_owner, lease_until) = (
			SELECT CASE WHEN j.cancel_requested AND i ->> 1 IN ('pending', 'stuck') THEN 'cancelled' ELSE i ->> 1 END,
				CASE WHEN i ->> 2 = '1' THEN j.run_at
					ELSE statement_timestamp() + (i ->> 3)::bigint * interval '1 microsecond' END,
				CASE WHEN i ->> 7 = '1' OR (j.cancel_requested AND i ->> 1 IN ('pending', 'stuck'))
					THEN statement_timestamp() END,
				j.free_attempts + (i ->> 4)::int,
				CASE WHEN i ->> 5 = '1' THEN j.last_error ELSE nullif(i ->> 6, '') END,
				NULL::text, NULL::timestamptz
			FROM (SELECT $2::jsonb -> ` + leaseKeySQL + ` AS i) AS lease)
	WHERE j.id = ANY($1::bigint[]) AND j.status || '' = 'processing'
		AND j.lease_owner = $2::jsonb -> ` + leaseKeySQL + ` ->> 0`
	applyTail = applyReturning + `
), ended AS (
	` + applyEnded + `
	FROM done
)` + endAttemptsSQL + `
SELECT id, ` + applyCancelled + ` FROM done ORDER BY id`
	// applyReturning is what applyUpdate returns of each job it updates
	// (cancel_requested, which no finish changes, as it was).
	applyReturning = `
	RETURNING j.id, j.attempt, j.claimed_at, j.heartbeat_at, j.cancel_requested,
		$2::jsonb -> ` + leaseKeySQL + ` AS input`
	// applyCancelled says, of a row applyUpdate returned, whether the
	// cancel rule made its job cancelled.
	applyCancelled = `(cancel_requested AND input ->> 1 IN ('pending', 'stuck'))`
	// applyEnded selects, from applyUpdate's returned rows, the attempts
	// they end, for endAttemptsSQL: the outcome is the cancelled outcome,
	// or the outcome when the input has none, for a job so cancelled.
	applyEnded = `SELECT id, attempt, input ->> 0 AS owner, claimed_at, heartbeat_at, statement_timestamp() AS ended_at,
		CASE WHEN ` + applyCancelled + ` THEN coalesce(input ->> 10, input ->> 8) ELSE input ->> 8 END AS outcome,
		nullif(input ->> 9, '') AS error`
)

// finishSQL applies the transitions of a batch of leases (see applyHead).
const finishSQL = applyHead + applyTail

// finishUniformSQL is finishSQL for the common batch: one transition for
// every lease, every lease of one owner ($1 ids, $2 the leases, see
// leaseKeySQL, $3 owner, then the transition's fields $4 state,
// $5 keep_run_at, $6 delay µs, $7 finished, $8 free, $9 keep_error,
// $10 error, $11 outcome, $12 attempt_error, $13 the outcome recorded
// for a job the cancel rule cancels). It writes the same columns
// with the same fence, and saves the per-lease values: about a quarter of
// the cost of a finish, which is half of what a drained job costs the
// database.
const finishUniformSQL = `WITH done AS (
	` + uniformUpdate + `
), ended AS (
	` + uniformEnded + `
	FROM done
)` + endAttemptsSQL + `
SELECT id, cancelled FROM done ORDER BY id`

// uniformUpdate is finishUniformSQL's UPDATE ($1 to $10); it returns,
// as cancelled, whether the cancel rule made each job cancelled.
const uniformUpdate = `UPDATE leasehold_jobs j SET
		status = CASE WHEN j.cancel_requested AND $4::text IN ('pending', 'stuck') THEN 'cancelled' ELSE $4::text END,
		run_at = CASE WHEN $5::boolean THEN j.run_at
			ELSE statement_timestamp() + $6::bigint * interval '1 microsecond' END,
		finished_at = CASE WHEN $7::boolean OR (j.cancel_requested AND $4::text IN ('pending', 'stuck'))
			THEN statement_timestamp() END,
		free_attempts = j.free_attempts + $8::int,
		last_error = CASE WHEN $9::boolean THEN j.last_error ELSE nullif($10::text, '') END,
		lease_owner = NULL, lease_until = NULL
	WHERE j.id = ANY($1::bigint[]) AND $2::jsonb ? ` + leaseKeySQL + `
		AND j.lease_owner = $3 AND j.status || '' = 'processing'
	RETURNING j.id, j.attempt, j.claimed_at, j.heartbeat_at,
		j.cancel_requested AND $4::text IN ('pending', 'stuck') AS cancelled`

// uniformEnded selects, from uniformUpdate's returned rows, the attempts
// they end ($3 owner, $11 outcome, or $13 for a job the cancel rule
// cancelled, $12 attempt_error), for endAttemptsSQL.
const uniformEnded = `SELECT id, attempt, $3::text AS owner, claimed_at, heartbeat_at, statement_timestamp() AS ended_at,
		CASE WHEN cancelled THEN $13::text ELSE $11::text END AS outcome, nullif($12::text, '') AS error`

// Finish applies the fenced transitions of ps in one statement, in tx when
// it is non-nil (see the package documentation for accepted types), and
// writes the history rows of the attempts they end. It returns the jobs
// whose fence matched, each cancelled or not by the cancel rule
// (driver.FinishResult). A batch of one owner and one transition is
// written with finishUniformSQL; a batch of several whose largest group of
// one owner and one transition holds at least minGroup leases, with
// finishSplitSQL; any other, with finishSQL.
func (d *Driver) Finish(ctx context.Context, tx any, ps []*driver.FinishParams) ([]driver.FinishResult, error) {
	q, err := d.querierFor(tx)
	if err != nil {
		return nil, err
	}
	if len(ps) == 0 {
		return nil, nil
	}
	if err := driver.ValidateFinish(ps); err != nil {
		return nil, fmt.Errorf("pgdriver: finish: %w", err)
	}
	if driver.Uniform(ps) {
		return d.finishUniform(ctx, q, ps)
	}
	if group, rest := largestUniform(ps); len(group) >= minGroup {
		return d.finishSplit(ctx, q, group, rest)
	}
	done, err := d.apply(ctx, q, finishSQL, ps)
	if err != nil {
		return nil, fmt.Errorf("pgdriver: finish: %w", err)
	}
	return done, nil
}

// apply runs query (finishSQL or rescueApplySQL) for the transitions of
// ps and returns the jobs whose fence matched.
func (d *Driver) apply(ctx context.Context, q querier, query string, ps []*driver.FinishParams) ([]driver.FinishResult, error) {
	ids, in, err := finishInputs(ps)
	if err != nil {
		return nil, err
	}
	return collect(ctx, q, newFinishScan().scan, query, ids, in)
}

// finishScan scans the rows the finish statements return: id and
// whether the cancel rule cancelled the job.
type finishScan struct {
	r    driver.FinishResult
	dest []any
}

func newFinishScan() *finishScan {
	s := &finishScan{}
	s.dest = []any{&s.r.ID, &s.r.Cancelled}
	return s
}

func (s *finishScan) scan(r scanner) (driver.FinishResult, error) {
	err := r.Scan(s.dest...)
	return s.r, err
}

// finishUniform runs finishUniformSQL for a batch driver.Uniform accepts.
func (d *Driver) finishUniform(ctx context.Context, q querier, ps []*driver.FinishParams) ([]driver.FinishResult, error) {
	ids, leases := leaseSet(len(ps), func(i int) driver.LeaseRef {
		return driver.LeaseRef{ID: ps[i].ID, Attempt: ps[i].Attempt}
	})
	args := append([]any{ids, leases, ps[0].Owner}, uniformArgs(ps[0].Transition)...)
	done, err := collect(ctx, q, newFinishScan().scan, finishUniformSQL, args...)
	if err != nil {
		return nil, fmt.Errorf("pgdriver: finish: %w", err)
	}
	return done, nil
}

// uniformArgs returns the parameters $4 to $13 of finishUniformSQL for t.
func uniformArgs(t driver.Transition) []any {
	return []any{string(t.State), t.KeepRunAt, micros(t.Delay), t.Finished, flag(t.FreeAttempt),
		t.KeepLastError, t.LastError, string(t.Outcome), t.AttemptError, string(t.OutcomeWhenCancelled())}
}

// flag is b as 0 or 1.
func flag(b bool) int {
	if b {
		return 1
	}
	return 0
}
