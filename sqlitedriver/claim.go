package sqlitedriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// claimSet is the SET clause of every claim. ?1 now, ?2 TTL (µs), ?3 owner.
// The new attempt gets no history row until it ends: the job row holds it
// (claimed_at, heartbeat_at).
const claimSet = `UPDATE leasehold_jobs SET status = 'processing', attempt = attempt + 1,
    lease_owner = ?3, lease_until = ?1 + ?2, heartbeat_at = NULL, claimed_at = ?1`

// takeOverCond is the extra condition for claiming a processing job whose
// lease expired before ?1, but never a lease of the claiming owner ?3
// (driver.ClaimParams TakeOver): Claim's, ClaimByID's, and that of the
// statements that end the attempts they take over, which must pick the
// same jobs.
const takeOverCond = `status = 'processing' AND lease_until < ?1 AND NOT cancel_requested
    AND attempt - free_attempts < max_attempts AND lease_owner <> ?3`

// notPaused4 holds unless queue ?4 is paused. It does not refer to the job
// row, so SQLite runs it once per statement (a primary-key lookup), not
// once per row.
const notPaused4 = `NOT EXISTS (SELECT 1 FROM leasehold_queues WHERE name = ?4 AND paused_at IS NOT NULL)`

// claimPendingSQL selects ready jobs through leasehold_jobs_ready, unless
// the queue is paused. ?4 queue, ?5 kinds (JSON array), ?6 limit.
//
// The unary + on run_at keeps the planner walking the index in claim
// order and stopping at the limit. Once ANALYZE (or PRAGMA optimize) has
// seen one queue and one priority, it otherwise prefers a skip-scan on the
// run_at range and sorts every ready job of the queue, in every claim: the
// cost of a claim then grows with the backlog.
const claimPendingSQL = `SELECT id, 1 AS grp, priority, run_at FROM (
        SELECT id, priority, run_at FROM leasehold_jobs
        WHERE status = 'pending' AND queue = ?4 AND +run_at <= ?1
          AND kind IN (SELECT value FROM json_each(?5)) AND ` + notPaused4 + `
        ORDER BY priority, run_at, id LIMIT ?6 + 0)`

// claimExpiredSQL selects expired leases through leasehold_jobs_leases,
// unless the queue is paused, but never the claiming owner's own (?3;
// driver.ClaimParams TakeOver).
const claimExpiredSQL = `SELECT id, 0 AS grp, priority, run_at FROM (
        SELECT id, priority, run_at FROM leasehold_jobs
        WHERE ` + takeOverCond + ` AND queue = ?4
          AND kind IN (SELECT value FROM json_each(?5)) AND ` + notPaused4 + `
        ORDER BY priority, run_at, id LIMIT ?6 + 0)`

// The limits are written "?6 + 0": SQLite plans a bare LIMIT parameter with
// its bound value and re-parses the statement whenever that value changes.

// claimSQL leases up to ?6 jobs, returning cols of each: pending ones, and
// expired takeovers first when takeOver is set. The pending jobs alone come in claim order and
// within the limit already: sorting them again cost a few per cent of a
// claim.
func claimSQL(takeOver bool, cols string) string {
	if !takeOver {
		return claimSet + `
WHERE id IN (SELECT id FROM (` + claimPendingSQL + `))
RETURNING ` + cols
	}
	return claimSet + `
WHERE id IN (SELECT id FROM (` + claimExpiredSQL + ` UNION ALL ` + claimPendingSQL + `)
    ORDER BY grp, priority, run_at, id LIMIT ?6 + 0)
RETURNING ` + cols
}

var (
	claimSQLPending  = claimSQL(false, claimedCols)
	claimSQLTakeOver = claimSQL(true, claimedCols)
	// claimRefsPending and claimRefsTakeOver return only each lease's
	// fence (claimThenRead).
	claimRefsPending  = claimSQL(false, "id, attempt")
	claimRefsTakeOver = claimSQL(true, "id, attempt")
)

// claimByIDSQL leases job ?4 if claimable; ?5 allows takeover, of
// another owner's lease only (takeOverCond). A job of a paused queue is
// not claimable.
const claimByIDSQL = claimSet + `
WHERE id = ?4 AND ((status = 'pending' AND run_at <= ?1) OR (?5 AND ` + takeOverCond + `))
  AND NOT EXISTS (SELECT 1 FROM leasehold_queues q
    WHERE q.name = leasehold_jobs.queue AND q.paused_at IS NOT NULL)
RETURNING ` + jobCols

// Claim leases up to p.Limit claimable jobs of p.Queue whose kind is in
// p.Kinds with one UPDATE ... RETURNING, after ending the attempts it
// takes over (endTakenOverSQL; only when some lease has expired, see
// claimQuery), in one transaction. Jobs are returned in claim order.
// p.After is ignored: SQLite removes the index entry of a claimed job at
// once, so a scan from the queue's first entry reads no entry of a job
// already claimed.
//
// A Driver from Open reads the claimed jobs after the commit, on its
// reader connections (claimThenRead); one from New reads them in the
// claim's transaction (claimInOne).
func (d *Driver) Claim(ctx context.Context, p *driver.ClaimParams) ([]*leasehold.JobRow, error) {
	if p.Limit <= 0 || len(p.Kinds) == 0 {
		return nil, nil
	}
	kinds, err := jsonParam(p.Kinds)
	if err != nil {
		return nil, err
	}
	if d.reader != nil {
		return d.claimThenRead(ctx, p, kinds)
	}
	return d.claimInOne(ctx, p, kinds)
}

// runClaim runs the claim of p in tx: the pending form, or the takeover
// form when claimQuery finds an expired lease to take over, after ending
// the attempts it takes over. It returns the claim's rows, and the ids of
// the jobs it takes over (for JobRow.TakenOver).
func (d *Driver) runClaim(ctx context.Context, tx *sql.Tx, p *driver.ClaimParams, kinds string, now int64,
	pending, takeOver string) (*sql.Rows, takenOver, error) {
	args := []any{now, micros(p.TTL), p.Owner, p.Queue, kinds, p.Limit}
	query, err := d.claimQuery(ctx, tx, p.TakeOver, now)
	if err != nil {
		return nil, nil, err
	}
	var taken takenOver
	if query == claimSQLTakeOver {
		if taken, err = d.endTakenOver(ctx, tx, args); err != nil {
			return nil, nil, err
		}
		pending = takeOver
	}
	rows, err := d.query(ctx, tx, pending, args...)
	if err != nil {
		return nil, nil, fmt.Errorf("sqlitedriver: claim: %w", err)
	}
	return rows, taken, nil
}

// claimInOne claims, and reads the claimed jobs, in one transaction on the
// driver's only connection.
func (d *Driver) claimInOne(ctx context.Context, p *driver.ClaimParams, kinds string) ([]*leasehold.JobRow, error) {
	var jobs []*leasehold.JobRow
	err := d.inTx(ctx, func(ctx context.Context, tx *sql.Tx, now int64) error {
		rows, taken, err := d.runClaim(ctx, tx, p, kinds, now, claimSQLPending, claimSQLTakeOver)
		if err != nil {
			return err
		}
		c := claimed{queue: p.Queue, owner: p.Owner, leaseUntil: fromMicros(now + micros(p.TTL))}
		if jobs, err = scanClaimed(rows, c); err != nil {
			return fmt.Errorf("sqlitedriver: claim: %w", err)
		}
		taken.mark(jobs)
		return nil
	}, anyExpiredSQL, claimSQLPending, claimSQLTakeOver, endTakenOverReturningSQL)
	if err != nil {
		return nil, err
	}
	sortClaimOrder(jobs)
	return jobs, nil
}

// ClaimByID leases job p.ID if it is claimable, after ending the attempt
// it takes over, if any. It returns (nil, nil) when the job is not
// claimable and ErrJobNotFound when it does not exist.
func (d *Driver) ClaimByID(ctx context.Context, p *driver.ClaimByIDParams) (*leasehold.JobRow, error) {
	var job *leasehold.JobRow
	err := d.inTx(ctx, func(ctx context.Context, tx *sql.Tx, now int64) error {
		args := []any{now, micros(p.TTL), p.Owner, p.ID, p.TakeOver}
		taken, err := d.endTakenOverByID(ctx, tx, p, args)
		if err != nil {
			return err
		}
		job, err = scanJob(d.queryRow(ctx, tx, claimByIDSQL, args...))
		if errors.Is(err, sql.ErrNoRows) {
			job = nil
			return checkExists(ctx, tx, p.ID)
		}
		if err != nil {
			return fmt.Errorf("sqlitedriver: claim job %d: %w", p.ID, err)
		}
		job.TakenOver = taken
		return nil
	}, claimByIDSQL, endTakenOverByIDReturningSQL)
	if err != nil {
		return nil, err
	}
	return job, nil
}

// endTakenOverByID ends, in tx, the attempt ClaimByID p (with args)
// takes over, if it allows takeover and the job's lease has expired; it
// reports whether it ended one, and so whether the claim takes the job
// over.
func (d *Driver) endTakenOverByID(ctx context.Context, tx *sql.Tx, p *driver.ClaimByIDParams, args []any) (bool, error) {
	if !p.TakeOver {
		return false, nil
	}
	var id int64
	err := d.queryRow(ctx, tx, endTakenOverByIDReturningSQL, args...).Scan(&id)
	if errors.Is(err, sql.ErrNoRows) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("sqlitedriver: end taken-over attempt of job %d: %w", p.ID, err)
	}
	return true, nil
}

// checkExists returns ErrJobNotFound unless job id exists.
func checkExists(ctx context.Context, q querier, id int64) error {
	var one int
	err := q.QueryRowContext(ctx, `SELECT 1 FROM leasehold_jobs WHERE id = ?`, id).Scan(&one)
	if errors.Is(err, sql.ErrNoRows) {
		return fmt.Errorf("%w: %d", leasehold.ErrJobNotFound, id)
	}
	if err != nil {
		return fmt.Errorf("sqlitedriver: read job %d: %w", id, err)
	}
	return nil
}
