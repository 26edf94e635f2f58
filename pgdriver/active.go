package pgdriver

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	leasehold "github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// activePendingSQL returns, per queue with pending jobs, their count
// (each priority counted up to $1), whether a priority reached the limit,
// and the age in microseconds of the oldest due one. The queues and their
// priorities are found by a loose scan of leasehold_jobs_ready_idx, one
// index probe per (queue, priority), so neither a long backlog nor the
// finished jobs are read.
const activePendingSQL = `WITH RECURSIVE qp AS (
	(SELECT queue, priority FROM leasehold_jobs WHERE status = 'pending'
		ORDER BY queue, priority LIMIT 1)
	UNION ALL
	SELECT n.queue, n.priority FROM qp CROSS JOIN LATERAL (
		SELECT queue, priority FROM leasehold_jobs
		WHERE status = 'pending' AND (queue, priority) > (qp.queue, qp.priority)
		ORDER BY queue, priority LIMIT 1) n
), per AS MATERIALIZED (
	SELECT qp.queue,
		(SELECT count(*) FROM (SELECT 1 FROM leasehold_jobs j
			WHERE j.status = 'pending' AND j.queue = qp.queue AND j.priority = qp.priority
			LIMIT $1) c) AS n,
		(SELECT j.run_at FROM leasehold_jobs j
			WHERE j.status = 'pending' AND j.queue = qp.queue AND j.priority = qp.priority
			ORDER BY j.run_at LIMIT 1) AS first_run
	FROM qp
)
SELECT queue, sum(n)::bigint, bool_or(n >= $1),
	coalesce(floor(extract(epoch FROM now() - min(first_run) FILTER (
		WHERE first_run <= now())) * 1000000), 0)::bigint
FROM per GROUP BY queue ORDER BY queue`

// activeLeasesSQL returns, per queue and kind with processing jobs, the
// live and expired leases: as many rows as jobs run at once, read through
// leasehold_jobs_lease_idx.
const activeLeasesSQL = `SELECT queue, kind,
	count(*) FILTER (WHERE lease_until >= now()),
	count(*) FILTER (WHERE lease_until < now())
FROM leasehold_jobs WHERE status = 'processing'
GROUP BY queue, kind ORDER BY queue, kind`

// activeFlaggedSQL returns, per queue and state, the jobs in the
// unfinished states other than pending and processing (%s: their names
// as literals, which leasehold_jobs_flagged_idx's predicate covers).
const activeFlaggedSQL = `SELECT queue, status, count(*) FROM leasehold_jobs
WHERE status IN (%s) GROUP BY queue, status ORDER BY queue, status`

// activeUnclaimedSQL returns, per queue with pending jobs and per kind,
// the jobs never claimed among the queue's first $1 due jobs in claim
// order, and the age in microseconds of the oldest of them.
const activeUnclaimedSQL = `WITH RECURSIVE q AS (
	(SELECT queue FROM leasehold_jobs WHERE status = 'pending' ORDER BY queue LIMIT 1)
	UNION ALL
	SELECT (SELECT queue FROM leasehold_jobs WHERE status = 'pending' AND queue > q.queue
		ORDER BY queue LIMIT 1) FROM q WHERE q.queue IS NOT NULL
)
SELECT q.queue, h.kind, count(*),
	coalesce(floor(extract(epoch FROM now() - min(h.run_at)) * 1000000), 0)::bigint
FROM q CROSS JOIN LATERAL (
	SELECT kind, run_at, attempt FROM leasehold_jobs j
	WHERE j.status = 'pending' AND j.queue = q.queue AND j.run_at <= now()
	ORDER BY j.priority, j.run_at, j.id LIMIT $1) h
WHERE q.queue IS NOT NULL AND h.attempt = 0
GROUP BY q.queue, h.kind ORDER BY q.queue, h.kind`

// ActiveQueueStats returns the unfinished jobs' QueueStats of each queue
// with unfinished jobs or paused, reading through indexes at most about
// p.CountLimit rows per (queue, state), in one read-only transaction
// whose statements go as one batch (three round trips: begin, the batch,
// commit; one more when a count is estimated).
func (d *Driver) ActiveQueueStats(ctx context.Context, p *driver.ActiveStatsParams) ([]*leasehold.QueueStats, error) {
	limit := driver.DefaultCountLimit
	if p != nil && p.CountLimit > 0 {
		limit = p.CountLimit
	}
	b := &pgx.Batch{}
	a := newActiveStats()
	// The planner cannot know how few queues the loose scans find, so it
	// overestimates their cost and would compile them (JIT) for longer
	// than they run.
	b.Queue(noJITSQL)
	b.Queue(activePendingSQL, limit).Query(a.scanPending)
	b.Queue(activeLeasesSQL).Query(a.scanLeases)
	if states := flaggedStates(); len(states) > 0 {
		b.Queue(fmt.Sprintf(activeFlaggedSQL, states)).Query(a.scanFlagged)
	}
	b.Queue(activeUnclaimedSQL, min(limit, unclaimedSample)).Query(a.scanUnclaimed)
	b.Queue(pausedSQL).Query(a.scanPaused)
	err := pgx.BeginTxFunc(ctx, d.pool, pgx.TxOptions{AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		return tx.SendBatch(ctx, b).Close()
	})
	if err != nil {
		return nil, fmt.Errorf("pgdriver: active queue stats: %w", err)
	}
	if err := d.estimate(ctx, a.capped, limit); err != nil {
		return nil, err
	}
	return a.result(), nil
}

// unclaimedSample caps how many due jobs per queue ActiveQueueStats
// reads for NeverClaimed (each one a heap fetch, for its attempt).
const unclaimedSample = driver.DefaultUnclaimedSample

// noJITSQL turns JIT compilation off for the rest of the transaction.
const noJITSQL = `SET LOCAL jit = off`

// flaggedStates returns, as SQL literals, the unfinished states other
// than pending and processing.
func flaggedStates() string {
	var lits []string
	for _, s := range leasehold.AllStates {
		if !s.Finished() && s != leasehold.StatePending && s != leasehold.StateProcessing {
			lits = append(lits, "'"+string(s)+"'")
		}
	}
	return strings.Join(lits, ", ")
}

// estimateSQL asks the planner how many pending jobs a queue has; $1 is
// the queue.
const estimateSQL = `EXPLAIN (FORMAT JSON) SELECT 1 FROM leasehold_jobs
WHERE status = 'pending' AND queue = $1`

// estimate replaces the pending count of each capped queue with the
// planner's estimate (never below limit, which was counted), and lists
// pending in its Estimated.
func (d *Driver) estimate(ctx context.Context, capped []*leasehold.QueueStats, limit int) error {
	if len(capped) == 0 {
		return nil
	}
	b := &pgx.Batch{}
	for _, q := range capped {
		b.Queue(estimateSQL, q.Queue).QueryRow(func(row pgx.Row) error {
			var plan []struct {
				Plan struct {
					Rows float64 `json:"Plan Rows"`
				} `json:"Plan"`
			}
			var raw []byte
			if err := row.Scan(&raw); err != nil {
				return err
			}
			if err := json.Unmarshal(raw, &plan); err != nil || len(plan) == 0 {
				return fmt.Errorf("read the plan of %q: %v", q.Queue, err)
			}
			q.Counts[leasehold.StatePending] = max(q.Counts[leasehold.StatePending], int64(plan[0].Plan.Rows), int64(limit))
			q.Estimated = append(q.Estimated, leasehold.StatePending)
			return nil
		})
	}
	if err := d.pool.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("pgdriver: active queue stats: estimate: %w", err)
	}
	return nil
}

// activeStats gathers ActiveQueueStats' rows by queue.
type activeStats struct {
	byQueue map[string]*leasehold.QueueStats
	// kindLeases holds the live leases per queue and kind.
	kindLeases map[[2]string]int64
	capped     []*leasehold.QueueStats
	paused     map[string]time.Time
}

func newActiveStats() *activeStats {
	return &activeStats{byQueue: map[string]*leasehold.QueueStats{}, kindLeases: map[[2]string]int64{}, paused: map[string]time.Time{}}
}

// queue returns the stats of name, creating them.
func (a *activeStats) queue(name string) *leasehold.QueueStats {
	q := a.byQueue[name]
	if q == nil {
		q = &leasehold.QueueStats{Queue: name, Counts: map[leasehold.JobState]int64{}}
		a.byQueue[name] = q
	}
	return q
}

func (a *activeStats) scanPending(rs pgx.Rows) error {
	for rs.Next() {
		var (
			name         string
			n, oldest    int64
			reachedLimit bool
		)
		if err := rs.Scan(&name, &n, &reachedLimit, &oldest); err != nil {
			return err
		}
		q := a.queue(name)
		q.Counts[leasehold.StatePending] = n
		q.OldestPending = driver.Micros(oldest)
		if reachedLimit {
			a.capped = append(a.capped, q)
		}
	}
	return rs.Err()
}

func (a *activeStats) scanLeases(rs pgx.Rows) error {
	for rs.Next() {
		var (
			name, kind    string
			live, expired int64
		)
		if err := rs.Scan(&name, &kind, &live, &expired); err != nil {
			return err
		}
		q := a.queue(name)
		q.Counts[leasehold.StateProcessing] += live + expired
		q.LiveLeases += live
		q.ExpiredLeases += expired
		a.kindLeases[[2]string{name, kind}] = live
	}
	return rs.Err()
}

func (a *activeStats) scanFlagged(rs pgx.Rows) error {
	for rs.Next() {
		var (
			name, state string
			n           int64
		)
		if err := rs.Scan(&name, &state, &n); err != nil {
			return err
		}
		a.queue(name).Counts[leasehold.JobState(state)] = n
	}
	return rs.Err()
}

func (a *activeStats) scanUnclaimed(rs pgx.Rows) error {
	for rs.Next() {
		var (
			name string
			b    leasehold.KindBacklog
			age  int64
		)
		if err := rs.Scan(&name, &b.Kind, &b.Due, &age); err != nil {
			return err
		}
		b.OldestDue = driver.Micros(age)
		b.LiveLeases = a.kindLeases[[2]string{name, b.Kind}]
		q := a.queue(name)
		q.NeverClaimed = append(q.NeverClaimed, &b)
	}
	return rs.Err()
}

func (a *activeStats) scanPaused(rs pgx.Rows) error {
	for rs.Next() {
		var (
			name string
			at   time.Time
		)
		if err := rs.Scan(&name, &at); err != nil {
			return err
		}
		a.paused[name] = at
	}
	return rs.Err()
}

// result returns the stats sorted by queue, paused queues merged in.
func (a *activeStats) result() []*leasehold.QueueStats {
	out := make([]*leasehold.QueueStats, 0, len(a.byQueue))
	for _, q := range a.byQueue {
		out = append(out, q)
	}
	slices.SortFunc(out, func(x, y *leasehold.QueueStats) int { return strings.Compare(x.Queue, y.Queue) })
	return driver.MergePaused(out, a.paused)
}
