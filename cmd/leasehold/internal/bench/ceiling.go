package bench

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strconv"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
)

// CeilingResult is the bare-SQL ceiling: the same jobs claimed and
// completed by plain SQL loops (a batched conditional-UPDATE claim, then
// a fenced batched completion that writes the attempts' history rows, as
// the drivers do), with no engine and no handler.
//
// The loops keep their own copy of the statements on purpose: the ceiling
// is what the database can do for the same work with nothing of
// leasehold's in the way, so it must not move when the drivers' SQL
// changes. The drain phase measures the drivers' own SQL; a driver change
// that makes the drain slower shows as a lower ratio to this ceiling.
//
// With the drain phase, the ceiling is measured in rounds with the drain
// of the default worker count (see drainRounds), and just before and just
// after every other drain, so that each drain is compared with ceilings
// measured next to it: the machine is shared and its speed drifts within
// a run.
type CeilingResult struct {
	Loops int `json:"loops"`
	Batch int `json:"batch"`
	Jobs  int `json:"jobs"`
	// JobsPerSec is the median of the samples; BestJobsPerSec the fastest.
	JobsPerSec     float64 `json:"jobs_per_sec"`
	BestJobsPerSec float64 `json:"best_jobs_per_sec"`
	// Samples are the rates of every measurement, in run order.
	Samples []float64 `json:"samples"`
	// Statements and Cost are those of the first measurement.
	Statements int64 `json:"statements"`
	// Cost is the bare loops' own cost per job (pgx, or database/sql and
	// the SQLite engine).
	Cost Cost `json:"client_cost"`
}

// summarize sets the median and the best of the samples.
func (r *CeilingResult) summarize() {
	if len(r.Samples) == 0 {
		return
	}
	r.BestJobsPerSec = slices.Max(r.Samples)
	r.JobsPerSec = median(r.Samples)
}

// median returns the median of vs (the mean of the middle two for an
// even count), 0 for none.
func median(vs []float64) float64 {
	s := slices.Sorted(slices.Values(vs))
	if len(s) == 0 {
		return 0
	}
	if len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[len(s)/2]
}

// pgCeilingClaim leases up to $2 pending jobs of the default queue to $1
// for 30 s, in one statement. As in the driver, the claim writes no
// history row: the job row holds the open attempt.
const pgCeilingClaim = `WITH picked AS (
	SELECT id FROM leasehold_jobs
	WHERE status = 'pending' AND queue = 'default' AND run_at <= now()
	ORDER BY priority, run_at, id
	LIMIT $2
	FOR UPDATE SKIP LOCKED
)
UPDATE leasehold_jobs j
SET status = 'processing', attempt = j.attempt + 1, lease_owner = $1,
	lease_until = now() + interval '30 seconds', heartbeat_at = NULL, claimed_at = now()
FROM picked p WHERE j.id = p.id
RETURNING j.id, j.attempt`

// pgCeilingComplete completes the leases of owner $3, fenced, and writes
// their history rows, once, in one statement: $1 holds their ids, $2 a
// JSON object keyed by "id:attempt". Jobs are found by primary key and the
// fence looked up in the object, as the driver does: a join with
// unnest(ids, attempts) can be planned as a nested loop that rescans the
// array for every job. (The driver also ends an open row left by a claim
// from before its migration 008; a bare loop has none.)
const pgCeilingComplete = `WITH done AS (
	UPDATE leasehold_jobs j
	SET status = 'completed', finished_at = now(), lease_owner = NULL, lease_until = NULL
	WHERE j.id = ANY($1::bigint[]) AND $2::jsonb ? (j.id::text || ':' || j.attempt::text)
		AND j.lease_owner = $3 AND j.status || '' = 'processing'
	RETURNING j.id, j.attempt, j.claimed_at, j.heartbeat_at
)
INSERT INTO leasehold_attempts (job_id, attempt, owner, claimed_at, heartbeat_at, ended_at, outcome)
SELECT id, attempt, $3, claimed_at, heartbeat_at, now(), 'completed' FROM done`

// appendLease appends a lease's key and a value to a JSON object.
func appendLease(b []byte, id int64, attempt int32) []byte {
	if len(b) > 1 {
		b = append(b, ',')
	}
	b = append(b, '"')
	b = strconv.AppendInt(b, id, 10)
	b = append(b, ':')
	b = strconv.AppendInt(b, int64(attempt), 10)
	return append(b, `":1`...)
}

// runCeiling measures the ceiling once, as a phase of its own (without
// the drain phase).
func (b *bench) runCeiling(ctx context.Context) error {
	if b.want(PhaseDrain) {
		return nil // measured around each drain (see runDrain)
	}
	_, err := b.measureCeiling(ctx)
	return err
}

// measureCeiling runs the bare loops on a fresh set of jobs, adds the rate
// to the ceiling's samples and returns it.
func (b *bench) measureCeiling(ctx context.Context) (float64, error) {
	s, err := b.newScratch(ctx)
	if err != nil {
		return 0, err
	}
	defer s.Close()
	if _, err := insertJobs(ctx, s.drv, b.opts.Jobs); err != nil {
		return 0, err
	}
	if err := s.settle(ctx); err != nil {
		return 0, err
	}
	if err := b.resetStatements(ctx); err != nil {
		return 0, err
	}
	r := &CeilingResult{Loops: b.opts.CeilingLoops, Batch: b.opts.CeilingBatch, Jobs: b.opts.Jobs}
	var (
		done  atomic.Int64
		stmts atomic.Int64
	)
	loop := s.pgCeilingLoop
	if !b.postgres() {
		loop = s.sqliteCeilingLoop
	}
	ctx, cancel := context.WithTimeout(ctx, b.opts.Timeout)
	defer cancel()
	start, cost := time.Now(), startCost()
	g, gctx := errgroup.WithContext(ctx)
	for i := range r.Loops {
		owner := fmt.Sprintf("ceiling-%d", i)
		g.Go(func() error { return loop(gctx, owner, r.Batch, &done, &stmts) })
	}
	if err := g.Wait(); err != nil {
		return 0, err
	}
	d := time.Since(start)
	r.Cost = cost.perJob(r.Jobs)
	if got := done.Load(); got != int64(r.Jobs) {
		return 0, fmt.Errorf("completed %d of %d jobs", got, r.Jobs)
	}
	rate := float64(r.Jobs) / d.Seconds()
	r.Statements = stmts.Load()
	if b.stats != nil {
		if r.Statements, _, err = b.stats.read(ctx); err != nil {
			return 0, err
		}
	}
	if b.rep.Ceiling == nil {
		b.rep.Ceiling = r
	}
	b.rep.Ceiling.Samples = append(b.rep.Ceiling.Samples, rate)
	b.logf("ceiling: %d loops x %d: %d jobs in %.2fs: %.0f jobs/s", r.Loops, r.Batch, r.Jobs, d.Seconds(), rate)
	return rate, nil
}

// pgCeilingLoop claims and completes batches until no job is left.
func (s *scratch) pgCeilingLoop(ctx context.Context, owner string, batch int, done, stmts *atomic.Int64) error {
	ids := make([]int64, 0, batch)
	leases := make([]byte, 0, 16*batch)
	for {
		ids, leases = ids[:0], append(leases[:0], '{')
		rows, err := s.pool.Query(ctx, pgCeilingClaim, owner, batch)
		if err != nil {
			return fmt.Errorf("claim: %w", err)
		}
		for rows.Next() {
			var (
				id int64
				a  int32
			)
			if err := rows.Scan(&id, &a); err != nil {
				rows.Close()
				return fmt.Errorf("claim: %w", err)
			}
			ids, leases = append(ids, id), appendLease(leases, id, a)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return fmt.Errorf("claim: %w", err)
		}
		stmts.Add(1)
		if len(ids) == 0 {
			return nil
		}
		// As text, as the driver sends it: pgx sends a []byte as bytea in
		// the exec modes that describe no statement (simple_protocol).
		tag, err := s.pool.Exec(ctx, pgCeilingComplete, ids, string(append(leases, '}')), owner)
		if err != nil {
			return fmt.Errorf("complete: %w", err)
		}
		stmts.Add(1)
		if tag.RowsAffected() != int64(len(ids)) {
			return fmt.Errorf("complete: %d of %d fenced writes applied", tag.RowsAffected(), len(ids))
		}
		done.Add(int64(len(ids)))
	}
}

// SQLite's ceiling: one BEGIN IMMEDIATE transaction claims a batch,
// another writes the history rows of its attempts, once, from the job
// rows, and completes it, fenced (SQLite cannot return the old values of
// an updated row, so the history comes first, as in the driver). The
// leases travel as the driver's do, a JSON object keyed by job id whose
// values are attempts. Times are Unix microseconds of SQLite's clock, as
// in sqlitedriver.
const (
	sqliteNow          = `CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER) * 1000`
	sqliteCeilingClaim = `UPDATE leasehold_jobs SET status = 'processing', attempt = attempt + 1,
	lease_owner = ?1, lease_until = ?2 + 30000000, heartbeat_at = NULL, claimed_at = ?2
WHERE id IN (SELECT id FROM leasehold_jobs
	WHERE status = 'pending' AND queue = 'default' AND +run_at <= ?2
	ORDER BY priority, run_at, id LIMIT ?3)
RETURNING id, attempt`
	sqliteCeilingEnd = `INSERT INTO leasehold_attempts (job_id, attempt, owner, claimed_at, heartbeat_at, ended_at, outcome)
SELECT j.id, j.attempt, ?1, j.claimed_at, j.heartbeat_at, ?2, 'completed'
FROM (SELECT key AS rid, value AS ratt FROM json_each(?3)) AS r
JOIN leasehold_jobs AS j ON j.id = r.rid
WHERE j.attempt = r.ratt AND j.lease_owner = ?1 AND +j.status = 'processing'`
	sqliteCeilingComplete = `UPDATE leasehold_jobs SET status = 'completed', finished_at = ?2,
	lease_owner = NULL, lease_until = NULL
FROM (SELECT key AS rid, value AS ratt FROM json_each(?3)) AS r
WHERE leasehold_jobs.id = r.rid AND leasehold_jobs.attempt = r.ratt
	AND leasehold_jobs.lease_owner = ?1 AND +leasehold_jobs.status = 'processing'`
)

// sqliteLeaseSet is the lease set of refs, each {id, attempt}: a JSON
// object keyed by job id whose values are attempts.
func sqliteLeaseSet(refs [][2]int64) []byte {
	b := append(make([]byte, 0, 2+24*len(refs)), '{')
	for i, r := range refs {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(append(b, '"'), r[0], 10)
		b = strconv.AppendInt(append(b, '"', ':'), r[1], 10)
	}
	return append(b, '}')
}

func (s *scratch) sqliteCeilingLoop(ctx context.Context, owner string, batch int, done, stmts *atomic.Int64) error {
	db, err := s.bareSQLite()
	if err != nil {
		return err
	}
	for {
		var refs [][2]int64
		err := sqliteTx(ctx, db, func(tx *sql.Tx, now int64) error {
			rows, err := tx.QueryContext(ctx, sqliteCeilingClaim, owner, now, batch)
			if err != nil {
				return err
			}
			for rows.Next() {
				var r [2]int64
				if err := rows.Scan(&r[0], &r[1]); err != nil {
					rows.Close()
					return err
				}
				refs = append(refs, r)
			}
			rows.Close()
			return rows.Err()
		})
		stmts.Add(1)
		if err != nil {
			return fmt.Errorf("claim: %w", err)
		}
		if len(refs) == 0 {
			return nil
		}
		arr := sqliteLeaseSet(refs)
		var applied int64
		err = sqliteTx(ctx, db, func(tx *sql.Tx, now int64) error {
			if _, err := tx.ExecContext(ctx, sqliteCeilingEnd, owner, now, string(arr)); err != nil {
				return err
			}
			res, err := tx.ExecContext(ctx, sqliteCeilingComplete, owner, now, string(arr))
			if err != nil {
				return err
			}
			applied, err = res.RowsAffected()
			return err
		})
		stmts.Add(1)
		if err != nil {
			return fmt.Errorf("complete: %w", err)
		}
		if applied != int64(len(refs)) {
			return fmt.Errorf("complete: %d of %d fenced writes applied", applied, len(refs))
		}
		done.Add(applied)
	}
}

// sqliteTx runs fn in a write transaction with SQLite's clock read once.
func sqliteTx(ctx context.Context, db *sql.DB, fn func(tx *sql.Tx, now int64) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	var now int64
	if err := tx.QueryRowContext(ctx, "SELECT "+sqliteNow).Scan(&now); err != nil {
		return err
	}
	if err := fn(tx, now); err != nil {
		return err
	}
	return tx.Commit()
}
