package main

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"golang.org/x/sync/errgroup"
)

// lab runs drains in its scratch schema.
type lab struct {
	pool *pgxpool.Pool
	opts options
	// cursor is the largest id claimed in the current drain.
	cursor atomic.Int64
	// stats is the schema of pg_stat_statements, "" when the server does
	// not load it.
	stats string
}

// result is one drain's figures.
type result struct {
	rate       float64 // jobs/s
	serverUS   float64 // server execution time per job, µs (0 without pg_stat_statements)
	walPerJob  float64
	statements bool
}

func (r result) String() string {
	s := fmt.Sprintf("%6.0f jobs/s, %5.0f WAL B/job", r.rate, r.walPerJob)
	if r.statements {
		s += fmt.Sprintf(", server %5.2f µs/job", r.serverUS)
	}
	return s
}

// drain inserts fresh jobs and claims and completes them all with v.
func (l *lab) drain(ctx context.Context, v variant) (res result, err error) {
	if err := l.reset(ctx, v.indexes); err != nil {
		return result{}, fmt.Errorf("reset: %w", err)
	}
	if v.indexes != nil {
		defer func() { err = errors.Join(err, l.restoreIndexes(ctx)) }()
	}
	if l.stats != "" {
		if _, err := l.pool.Exec(ctx, `SELECT `+l.stats+`.pg_stat_statements_reset()`); err != nil {
			return result{}, err
		}
	}
	l.cursor.Store(0)
	if l.opts.hold {
		tx, err := l.hold(ctx)
		if err != nil {
			return result{}, err
		}
		defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	}
	var lsn string
	if err := l.pool.QueryRow(ctx, `SELECT pg_current_wal_lsn()::text`).Scan(&lsn); err != nil {
		return result{}, err
	}
	start := time.Now()
	done := make([]int, l.opts.loops)
	g, gctx := errgroup.WithContext(ctx)
	for i := range l.opts.loops {
		g.Go(func() (err error) {
			done[i], err = l.loop(gctx, fmt.Sprint("lab-", i), v.sql)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return result{}, err
	}
	d := time.Since(start)
	total := 0
	for _, n := range done {
		total += n
	}
	if total != l.opts.jobs {
		return result{}, fmt.Errorf("completed %d of %d jobs", total, l.opts.jobs)
	}
	return l.figures(ctx, lsn, d)
}

// reset empties the tables, inserts fresh jobs, replaces the hot
// table's indexes with indexes when set, and settles the tables.
func (l *lab) reset(ctx context.Context, indexes []string) error {
	if _, err := l.pool.Exec(ctx, truncateSQL); err != nil {
		return err
	}
	if _, err := l.pool.Exec(ctx, insertSQL, l.opts.jobs); err != nil {
		return err
	}
	if indexes != nil {
		if err := l.execAll(ctx, append(dropIndexes(), indexes...)); err != nil {
			return err
		}
	}
	for _, q := range settleSQL {
		if _, err := l.pool.Exec(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// hold opens a transaction whose snapshot keeps vacuum and index scans
// from removing any row version the drain leaves dead, as a long report
// would.
func (l *lab) hold(ctx context.Context) (pgx.Tx, error) {
	tx, err := l.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		return nil, fmt.Errorf("hold: %w", err)
	}
	if _, err := tx.Exec(ctx, `SELECT count(*) FROM leasehold_attempts`); err != nil {
		_ = tx.Rollback(ctx)
		return nil, fmt.Errorf("hold: %w", err)
	}
	return tx, nil
}

// restoreIndexes drops a variant's indexes and rebuilds the ones it
// replaced, with the tables emptied first so the rebuild is quick.
func (l *lab) restoreIndexes(ctx context.Context) error {
	return l.execAll(ctx, restoreSQL)
}

func (l *lab) execAll(ctx context.Context, qs []string) error {
	for _, q := range qs {
		if _, err := l.pool.Exec(ctx, q); err != nil {
			return fmt.Errorf("%.60s: %w", q, err)
		}
	}
	return nil
}

// figures reads the drain's WAL and server time.
func (l *lab) figures(ctx context.Context, lsn string, d time.Duration) (result, error) {
	n := float64(l.opts.jobs)
	r := result{rate: n / d.Seconds(), statements: l.stats != ""}
	var wal float64
	if err := l.pool.QueryRow(ctx, `SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn)`, lsn).Scan(&wal); err != nil {
		return r, err
	}
	r.walPerJob = wal / n
	if l.stats != "" {
		var ms float64
		err := l.pool.QueryRow(ctx, `SELECT coalesce(sum(total_exec_time), 0) FROM `+l.stats+`.pg_stat_statements
			WHERE query LIKE '%leasehold_jobs j%'`).Scan(&ms)
		if err != nil {
			return r, err
		}
		r.serverUS = ms * 1000 / n
	}
	return r, nil
}

// loop claims and completes batches until none is left, and returns how
// many jobs it completed.
func (l *lab) loop(ctx context.Context, owner, complete string) (int, error) {
	done := 0
	for {
		ids, leases, err := l.claim(ctx, owner)
		if err != nil || len(ids) == 0 {
			return done, err
		}
		tag, err := l.pool.Exec(ctx, complete, ids, leases, owner)
		if err != nil {
			return done, fmt.Errorf("complete: %w", err)
		}
		if tag.RowsAffected() != int64(len(ids)) {
			return done, fmt.Errorf("complete: %d of %d fenced writes applied", tag.RowsAffected(), len(ids))
		}
		done += len(ids)
	}
}

// claim leases a batch and returns its ids and its leases as a JSON
// object keyed "id:attempt".
func (l *lab) claim(ctx context.Context, owner string) ([]int64, []byte, error) {
	after := l.cursor.Load()
	ids, leases, err := l.claimAfter(ctx, owner, after)
	if err == nil && len(ids) == 0 && after > 0 {
		return l.claimAfter(ctx, owner, 0) // nothing after the cursor: look behind it once
	}
	return ids, leases, err
}

// claimAfter leases a batch of jobs after id after, and moves the cursor
// past them.
func (l *lab) claimAfter(ctx context.Context, owner string, after int64) ([]int64, []byte, error) {
	rows, err := l.pool.Query(ctx, claimSQL, owner, l.opts.batch, after)
	if err != nil {
		return nil, nil, fmt.Errorf("claim: %w", err)
	}
	defer rows.Close()
	var ids []int64
	leases := []byte{'{'}
	for rows.Next() {
		var (
			id int64
			a  int32
		)
		if err := rows.Scan(&id, &a); err != nil {
			return nil, nil, fmt.Errorf("claim: %w", err)
		}
		if len(ids) > 0 {
			leases = append(leases, ',')
		}
		ids = append(ids, id)
		leases = fmt.Appendf(leases, `"%d:%d":1`, id, a)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("claim: %w", err)
	}
	for _, id := range ids {
		for c := l.cursor.Load(); id > c && !l.cursor.CompareAndSwap(c, id); c = l.cursor.Load() {
		}
	}
	return ids, append(leases, '}'), nil
}

// statementsSchema returns the schema of pg_stat_statements, creating
// the extension in public if needed, or "" when the server does not load
// it.
func statementsSchema(ctx context.Context, pool *pgxpool.Pool) string {
	var n int
	err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_settings
		WHERE name = 'shared_preload_libraries' AND setting ~ 'pg_stat_statements'`).Scan(&n)
	if err != nil || n != 1 {
		return ""
	}
	if _, err := pool.Exec(ctx, `CREATE EXTENSION IF NOT EXISTS pg_stat_statements SCHEMA public`); err != nil {
		return ""
	}
	var schema string
	err = pool.QueryRow(ctx, `SELECT quote_ident(extnamespace::regnamespace::text) FROM pg_extension
		WHERE extname = 'pg_stat_statements'`).Scan(&schema)
	if err != nil {
		return ""
	}
	return schema
}
