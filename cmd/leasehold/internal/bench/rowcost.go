package bench

import (
	"context"
	"fmt"
	"time"
)

// RowCost is what a drain cost the PostgreSQL server per job, read from
// the server: the WAL it wrote (the whole cluster's, so other sessions'
// writes in the meantime count too) and the row versions it made dead in
// the jobs, attempts and job UUIDs tables (their updates and deletes, from
// pg_stat_user_tables: each leaves one dead version for vacuum).
type RowCost struct {
	WALBytesPerJob float64 `json:"wal_bytes_per_job"`
	DeadRowsPerJob float64 `json:"dead_rows_per_job"`
}

// rowMark is the server's state when a measurement starts.
type rowMark struct {
	lsn  string
	dead int64
}

// deadRowsSQL sums the updates and deletes of the tables a job writes
// to in schema $1 so far: jobs, attempts and job UUIDs. It and the WAL
// reads carry probeComment: they run within the drain's statement count.
const deadRowsSQL = probeComment + `SELECT coalesce(sum(n_tup_upd + n_tup_del), 0)::bigint
FROM pg_stat_user_tables
WHERE schemaname = $1 AND relname IN ('leasehold_jobs', 'leasehold_attempts', 'leasehold_job_uuids')`

// walPositionSQL reads the WAL position; walSinceSQL the WAL written
// since position $1.
const (
	walPositionSQL = probeComment + `SELECT pg_current_wal_lsn()::text`
	walSinceSQL    = probeComment + `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn)::bigint`
)

// statsFlushWait bounds how long rowCost waits for the backends' table
// counters to reach the shared statistics (an idle backend flushes them
// within about a second).
const statsFlushWait = 5 * time.Second

// markRows reads the WAL position and the dead row count; nil on SQLite.
func (s *scratch) markRows(ctx context.Context) (*rowMark, error) {
	if s.pool == nil {
		return nil, nil
	}
	m := &rowMark{}
	if err := s.pool.QueryRow(ctx, walPositionSQL).Scan(&m.lsn); err != nil {
		return nil, fmt.Errorf("read the WAL position: %w", err)
	}
	var err error
	if m.dead, err = s.deadRows(ctx); err != nil {
		return nil, err
	}
	return m, nil
}

// deadRows reads the dead row count of the scratch schema's tables.
func (s *scratch) deadRows(ctx context.Context) (int64, error) {
	var n int64
	if err := s.pool.QueryRow(ctx, deadRowsSQL, s.schema).Scan(&n); err != nil {
		return 0, fmt.Errorf("read pg_stat_user_tables: %w", err)
	}
	return n, nil
}

// rowCost returns the cost per job of jobs since m: the WAL at once, the
// dead rows once the drain's backends have exited and the counters stop
// moving. nil m gives nil.
func (s *scratch) rowCost(ctx context.Context, m *rowMark, jobs int) (*RowCost, error) {
	if m == nil || jobs == 0 {
		return nil, nil
	}
	var wal int64
	if err := s.pool.QueryRow(ctx, walSinceSQL, m.lsn).Scan(&wal); err != nil {
		return nil, fmt.Errorf("read the WAL written: %w", err)
	}
	// A backend flushes its table counters when it exits: closing the
	// pool's connections makes the drain's reach the shared statistics.
	s.pool.Reset()
	dead, err := s.settledDeadRows(ctx)
	if err != nil {
		return nil, err
	}
	return &RowCost{WALBytesPerJob: float64(wal) / float64(jobs), DeadRowsPerJob: float64(dead-m.dead) / float64(jobs)}, nil
}

// settledDeadRows reads the dead row count until two reads 300 ms apart
// agree, for at most statsFlushWait.
func (s *scratch) settledDeadRows(ctx context.Context) (int64, error) {
	deadline := time.Now().Add(statsFlushWait)
	last, err := s.deadRows(ctx)
	for err == nil && time.Now().Before(deadline) {
		select {
		case <-ctx.Done():
			return 0, ctx.Err()
		case <-time.After(300 * time.Millisecond):
		}
		var n int64
		if n, err = s.deadRows(ctx); err == nil && n == last {
			return n, nil
		}
		last = n
	}
	return last, err
}

// describe is c for the drain's log line, empty for nil.
func (c *RowCost) describe() string {
	if c == nil {
		return ""
	}
	return fmt.Sprintf(", %.0f WAL bytes/job, %.2f dead row versions/job", c.WALBytesPerJob, c.DeadRowsPerJob)
}
