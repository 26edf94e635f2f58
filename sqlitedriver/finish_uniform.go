package sqlitedriver

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/leasehold/leasehold/driver"
)

// uniformFrom is the rest of a uniform batch's statement after its SET
// list: the leases of lease set ?2 (see leaseRowsFrom) of owner ?3, found
// by id and fenced as in applySQL. It returns nothing: see
// uniformReturning and finishUniform.
const uniformFrom = `
FROM ` + leaseRowsFrom + `?2` + leaseRowsTo + `
WHERE leasehold_jobs.id = r.rid AND leasehold_jobs.attempt = r.ratt
  AND leasehold_jobs.lease_owner = ?3 AND +leasehold_jobs.status = 'processing'`

// uniformReturning ends a uniform batch's statement that returns the
// leases it applied.
const uniformReturning = finishReturning

// uniformSQL returns finishSQL, without its RETURNING clause, for the
// common batch, one transition t for every lease and every lease of one
// owner, with t's fields as parameters from ?4 on (returned; ?1 is now,
// ?2 the leases, ?3 the owner). It writes
// what applySQL writes with the same fence, but sets only the columns t
// changes, so that it saves parsing ten fields of every entry and, for a
// batch of completions, evaluating any expression per row: a CASE on a
// parameter, evaluated for every row, costs SQLite about a tenth of a
// drained job. Each shape of transition is one statement text, prepared
// once. With plain set, the statement leaves out the cancel rule (see
// applySQL), for a batch none of whose jobs had its cancel requested
// (uniformIn knows it from the history rows it wrote).
func uniformSQL(t driver.Transition, plain bool) (string, []any) {
	var b strings.Builder
	args := []any{string(t.State)}
	// A pending or stuck job whose cancel was requested is cancelled (see
	// applySQL); a batch of completions, the common one, pays no CASE.
	cancellable := t.Cancellable() && !plain
	if cancellable {
		b.WriteString("UPDATE leasehold_jobs SET status = CASE WHEN cancel_requested THEN 'cancelled' ELSE ?4 END")
	} else {
		b.WriteString("UPDATE leasehold_jobs SET status = ?4")
	}
	if !t.KeepRunAt {
		args = append(args, micros(t.Delay))
		fmt.Fprintf(&b, ", run_at = ?1 + ?%d", 3+len(args))
	}
	if t.FreeAttempt {
		b.WriteString(", free_attempts = free_attempts + 1")
	}
	if !t.KeepLastError {
		args = append(args, t.LastError)
		fmt.Fprintf(&b, ", last_error = NULLIF(?%d, '')", 3+len(args))
	}
	switch {
	case t.Finished:
		b.WriteString(", finished_at = ?1")
	case cancellable:
		b.WriteString(", finished_at = CASE WHEN cancel_requested THEN ?1 END")
	default:
		b.WriteString(", finished_at = NULL")
	}
	b.WriteString(", lease_owner = NULL, lease_until = NULL" + uniformFrom)
	return b.String(), args
}

// leasePairs returns the lease set of ps in (id, attempt) order, and
// reports whether ps names each lease once (sortedLeaseSet).
func leasePairs(ps []*driver.FinishParams) (set string, distinct bool) {
	leases := make([][2]int64, len(ps))
	for i, p := range ps {
		leases[i] = [2]int64{p.ID, int64(p.Attempt)}
	}
	return sortedLeaseSet(leases)
}

// finishUniform is Finish for a batch driver.Uniform accepts, in tx t or
// in a transaction of its own (see uniformIn).
func (d *Driver) finishUniform(ctx context.Context, t *sql.Tx, ps []*driver.FinishParams) ([]driver.FinishResult, error) {
	var done []driver.FinishResult
	err := d.withTx(ctx, t, func(ctx context.Context, tx *sql.Tx, now int64) error {
		matched, all, err := d.uniformIn(ctx, tx, now, ps)
		if all {
			done = batchResults(ps)
		} else {
			done = appliedResults(ps, matched)
		}
		return err
	}, uniformQueries(ps[0].Transition)...)
	if err != nil {
		return nil, err
	}
	return done, nil
}

// uniformQueries returns the statements uniformIn may run for a batch of
// transition t, to be prepared.
func uniformQueries(t driver.Transition) []string {
	update, _ := uniformSQL(t, false)
	if !t.Cancellable() {
		return []string{endUniformSQL, update, update + uniformReturning}
	}
	plain, _ := uniformSQL(t, true)
	return []string{endUniformPlainSQL, endUniformCancelledSQL, plain, plain + uniformReturning, update + uniformReturning}
}

// uniformIn writes, in tx at now, the leases of ps, one owner and one
// transition (driver.Uniform).
//
// The history rows come first, with the same fence as the update, and
// the number written says whether every fence matched: when the batch
// names each lease once, that number is the count of leases whose fence
// matches. When it is all of them (the common case), the update runs
// without RETURNING and uniformIn reports all, with no map; otherwise the
// update returns the leases it applied, as the attempt of each job it
// updated, and whether each job's cancel was requested. For a transition
// the cancel rule applies to (to pending or stuck) the history rows are
// written by endUniformPlainSQL, and only when it did not write them all
// by endUniformCancelledSQL as well: unless that one wrote a row, no job
// of the batch had its cancel requested, and the update leaves out the
// rule (and, when the first wrote every row, RETURNING too: the common
// batch costs the statements it did before the rule was reported). Every
// statement runs in tx, so no other writer can change a fence or a cancel
// request between them.
func (d *Driver) uniformIn(ctx context.Context, tx *sql.Tx, now int64, ps []*driver.FinishParams) (matched map[int64]updated, all bool, err error) {
	set, distinct := leasePairs(ps)
	tr := ps[0].Transition
	head := []any{now, set, ps[0].Owner}
	ended, requested, err := d.endUniform(ctx, tx, tr, head, len(ps))
	if err != nil {
		return nil, false, err
	}
	update, targs := uniformSQL(tr, !requested)
	args := slices.Concat(head, targs)
	if distinct && ended == int64(len(ps)) && !requested {
		return nil, true, d.updateAll(ctx, tx, update, len(ps), args)
	}
	matched, err = d.finishJobs(ctx, tx, update+uniformReturning, args...)
	return matched, false, err
}

// endUniform writes the history rows of a uniform batch of n leases of
// transition t (head: the statements' parameters ?1 to ?3) and returns
// how many it wrote, and whether the job of one of them had its cancel
// requested where the cancel rule applies to t (see uniformIn).
func (d *Driver) endUniform(ctx context.Context, tx *sql.Tx, t driver.Transition, head []any, n int) (ended int64, requested bool, err error) {
	if !t.Cancellable() {
		ended, err = d.execCount(ctx, tx, endUniformSQL, slices.Concat(head, []any{string(t.Outcome), t.AttemptError}))
		return ended, false, err
	}
	ended, err = d.execCount(ctx, tx, endUniformPlainSQL, slices.Concat(head, []any{string(t.Outcome), t.AttemptError}))
	if err != nil || ended == int64(n) {
		// Every lease's row written: none of these jobs had its cancel
		// requested.
		return ended, false, err
	}
	more, err := d.execCount(ctx, tx, endUniformCancelledSQL,
		slices.Concat(head, []any{string(t.OutcomeWhenCancelled()), t.AttemptError}))
	return ended + more, more > 0, err
}

// execCount runs query, a statement that writes history rows, with args
// in tx, and returns how many rows it wrote.
func (d *Driver) execCount(ctx context.Context, tx *sql.Tx, query string, args []any) (int64, error) {
	res, err := d.exec(ctx, tx, query, args...)
	if err != nil {
		return 0, fmt.Errorf("sqlitedriver: end finished attempts: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, fmt.Errorf("sqlitedriver: end finished attempts: %w", err)
	}
	return n, nil
}

// updateAll runs update, a uniform batch's statement without RETURNING,
// for a batch of n leases whose every fence matched in tx.
func (d *Driver) updateAll(ctx context.Context, tx *sql.Tx, update string, n int, args []any) error {
	res, err := d.exec(ctx, tx, update, args...)
	if err != nil {
		return fmt.Errorf("sqlitedriver: finish: %w", err)
	}
	got, err := res.RowsAffected()
	if err != nil {
		return fmt.Errorf("sqlitedriver: finish: %w", err)
	}
	if got != int64(n) {
		// The same fence, in the same transaction, just matched them all.
		return fmt.Errorf("sqlitedriver: finish: %d of %d leases updated after all %d were ended", got, n, n)
	}
	return nil
}

// batchResults returns the jobs of ps, in order, none cancelled: the
// result of a uniform batch whose every fence matched and whose
// transition the cancel rule does not apply to.
func batchResults(ps []*driver.FinishParams) []driver.FinishResult {
	rs := make([]driver.FinishResult, len(ps))
	for i, p := range ps {
		rs[i] = driver.FinishResult{ID: p.ID}
	}
	return rs
}
