package sqlitedriver

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/leasetype"
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
const uniformReturning = `
RETURNING id, attempt`

// uniformSQL returns finishSQL, without its RETURNING clause, for the
// common batch, one transition t for every lease and every lease of one
// owner, with t's fields as parameters from ?4 on (returned; ?1 is now,
// ?2 the leases, ?3 the owner). It writes
// what applySQL writes with the same fence, but sets only the columns t
// changes, so that it saves parsing ten fields of every entry and, for a
// batch of completions, evaluating any expression per row: a CASE on a
// parameter, evaluated for every row, costs SQLite about a tenth of a
// drained job. Each shape of transition is one statement text, prepared
// once.
func uniformSQL(t driver.Transition) (string, []any) {
	var b strings.Builder
	args := []any{string(t.State)}
	// A pending or stuck job whose cancel was requested is cancelled (see
	// applySQL); a batch of completions, the common one, pays no CASE.
	cancellable := t.State == leasetype.StatePending || t.State == leasetype.StateStuck
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

// finishUniform is Finish for a batch driver.Uniform accepts.
//
// The history rows come first, with the same fence as the update, and
// the number written says whether every fence matched: when the batch
// names each lease once, that number is the count of leases whose fence
// matches. When it is all of them (the common case), the update runs
// without RETURNING and every id is applied; otherwise it returns the
// leases it applied. Both run in one write transaction, so no other
// writer can change a fence between the two.
func (d *Driver) finishUniform(ctx context.Context, t *sql.Tx, ps []*driver.FinishParams) ([]int64, error) {
	all, distinct := leasePairs(ps)
	tr := ps[0].Transition
	update, targs := uniformSQL(tr)
	returning := update + uniformReturning
	var done []int64
	err := d.withTx(ctx, t, func(ctx context.Context, tx *sql.Tx, now int64) error {
		res, err := d.exec(ctx, tx, endUniformSQL, now, all, ps[0].Owner, string(tr.Outcome), tr.AttemptError)
		if err != nil {
			return fmt.Errorf("sqlitedriver: end finished attempts: %w", err)
		}
		ended, err := res.RowsAffected()
		if err != nil {
			return fmt.Errorf("sqlitedriver: end finished attempts: %w", err)
		}
		args := append([]any{now, all, ps[0].Owner}, targs...)
		if distinct && ended == int64(len(ps)) {
			done, err = d.finishAll(ctx, tx, update, ps, args)
			return err
		}
		matched, err := d.finishJobs(ctx, tx, returning, args...)
		done = appliedIDs(ps, matched)
		return err
	}, endUniformSQL, update, returning)
	if err != nil {
		return nil, err
	}
	return done, nil
}

// finishAll runs update, a uniform batch's statement without RETURNING,
// for a batch whose every fence matched in tx, and returns all its ids.
func (d *Driver) finishAll(ctx context.Context, tx *sql.Tx, update string, ps []*driver.FinishParams, args []any) ([]int64, error) {
	res, err := d.exec(ctx, tx, update, args...)
	if err != nil {
		return nil, fmt.Errorf("sqlitedriver: finish: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return nil, fmt.Errorf("sqlitedriver: finish: %w", err)
	}
	if n != int64(len(ps)) {
		// The same fence, in the same transaction, just matched them all.
		return nil, fmt.Errorf("sqlitedriver: finish: %d of %d leases updated after all %d were ended", n, len(ps), len(ps))
	}
	done := make([]int64, len(ps))
	for i, p := range ps {
		done[i] = p.ID
	}
	return done, nil
}
