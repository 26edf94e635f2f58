package pgdriver

import (
	"context"
	"fmt"

	leasehold "github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// defaultPurgeLimit is Purge's limit when PurgeParams.Limit is 0.
const defaultPurgeLimit = 10000

// purgeSQL: $1 age in microseconds, $2 limit. One statement, so jobs and
// their history go in one transaction: the oldest finished jobs of every
// queue, through leasehold_jobs_finished_idx. The jobs, their history and
// their checkpoints are each deleted by an array of ids (ARRAY(...),
// evaluated once), so that each delete probes its table's primary key
// whatever the planner estimates of the batch. Joined to the batch
// instead, a generic plan (a statement the pool caches may get one),
// which estimates LIMIT $2 at a tenth of the candidates, hashed the batch
// and read each table whole (TestPurgeDeletesByKey).
const purgeSQL = `WITH doomed AS (
	DELETE FROM leasehold_jobs WHERE id = ANY (ARRAY(
		SELECT id FROM leasehold_jobs
		WHERE status IN ('completed', 'failed', 'cancelled')
			AND finished_at < now() - $1::bigint * interval '1 microsecond'
		ORDER BY finished_at
		LIMIT $2::int
		FOR UPDATE SKIP LOCKED))
	RETURNING id
)` + purgeDependents

// purgeQueuesSQL is purgeSQL for the finished jobs of the queues $3 only,
// read through leasehold_jobs_finished_queue_idx (migration 016): one
// index range per queue, in the index's order (queue, then finish time),
// so that a batch reads the jobs it deletes and those of no other queue,
// and stops at the limit without sorting what it read.
const purgeQueuesSQL = `WITH doomed AS (
	DELETE FROM leasehold_jobs WHERE id = ANY (ARRAY(
		SELECT id FROM leasehold_jobs
		WHERE status IN ('completed', 'failed', 'cancelled')
			AND finished_at < now() - $1::bigint * interval '1 microsecond'
			AND queue = ANY ($3::text[])
		ORDER BY queue, finished_at
		LIMIT $2::int
		FOR UPDATE SKIP LOCKED))
	RETURNING id
)` + purgeDependents

// purgeDependents deletes the history and checkpoints of the jobs doomed
// deleted, by primary key (see purgeSQL), and counts the jobs.
const purgeDependents = `, history AS (
	DELETE FROM leasehold_attempts a WHERE a.job_id = ANY (ARRAY(SELECT id FROM doomed))
), checkpoints AS (
	DELETE FROM leasehold_checkpoints c WHERE c.job_id = ANY (ARRAY(SELECT id FROM doomed))
)
SELECT count(*) FROM doomed`

// Purge deletes up to p.Limit (default 10000) terminal jobs of p.Queues
// (nil: every queue; empty: none) finished more than p.OlderThan ago,
// with their history and checkpoints, and returns how many it deleted.
func (d *Driver) Purge(ctx context.Context, p *driver.PurgeParams) (int64, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = defaultPurgeLimit
	}
	sql, args := purgeSQL, []any{micros(p.OlderThan), limit}
	switch {
	case p.Queues != nil && len(p.Queues) == 0:
		return 0, nil
	case p.Queues != nil:
		sql, args = purgeQueuesSQL, append(args, p.Queues)
	}
	var n int64
	if err := d.pool.QueryRow(ctx, sql, args...).Scan(&n); err != nil {
		return 0, fmt.Errorf("pgdriver: purge: %w", err)
	}
	return n, nil
}

// statsSQL returns one row per (queue, status), the queues in byte order
// (COLLATE "C"), as every driver lists them, whatever the database's
// collation.
const statsSQL = `SELECT queue, status, count(*),
	coalesce(floor(extract(epoch FROM now() - min(run_at) FILTER (
		WHERE status = 'pending' AND run_at <= now())) * 1000000), 0)::bigint,
	count(*) FILTER (WHERE status = 'processing' AND lease_until >= now()),
	count(*) FILTER (WHERE status = 'processing' AND lease_until < now())
FROM leasehold_jobs
GROUP BY queue, status
ORDER BY queue COLLATE "C", status`

// QueueStats returns per-queue counts by state, the age of the oldest
// claimable pending job, the numbers of live and expired leases and
// whether the queue is paused, ordered by queue; a paused queue with no
// jobs is included.
func (d *Driver) QueueStats(ctx context.Context) ([]*leasehold.QueueStats, error) {
	rs, err := d.pool.Query(ctx, statsSQL)
	if err != nil {
		return nil, fmt.Errorf("pgdriver: queue stats: %w", err)
	}
	defer rs.Close()
	var out []*leasehold.QueueStats
	for rs.Next() {
		var (
			queue, status string
			count, oldest int64
			live, expired int64
		)
		if err := rs.Scan(&queue, &status, &count, &oldest, &live, &expired); err != nil {
			return nil, fmt.Errorf("pgdriver: queue stats: %w", err)
		}
		if len(out) == 0 || out[len(out)-1].Queue != queue {
			out = append(out, &leasehold.QueueStats{Queue: queue, Counts: map[leasehold.JobState]int64{}})
		}
		s := out[len(out)-1]
		s.Counts[leasehold.JobState(status)] = count
		s.OldestPending = max(s.OldestPending, driver.Micros(oldest))
		s.LiveLeases += live
		s.ExpiredLeases += expired
	}
	if err := rs.Err(); err != nil {
		return nil, fmt.Errorf("pgdriver: queue stats: %w", err)
	}
	if err := d.neverClaimed(ctx, out); err != nil {
		return nil, err
	}
	paused, err := d.pausedQueues(ctx)
	if err != nil {
		return nil, err
	}
	return driver.MergePaused(out, paused), nil
}

// neverClaimedSQL returns, per (queue, kind) with due jobs never claimed,
// their count, the age of the oldest in microseconds and the kind's live
// leases.
const neverClaimedSQL = `SELECT queue, kind,
	count(*) FILTER (WHERE status = 'pending'),
	coalesce(floor(extract(epoch FROM now() - min(run_at) FILTER (WHERE status = 'pending')) * 1000000), 0)::bigint,
	count(*) FILTER (WHERE status = 'processing')
FROM leasehold_jobs
WHERE (status = 'pending' AND attempt = 0 AND run_at <= now())
	OR (status = 'processing' AND lease_until >= now())
GROUP BY queue, kind
HAVING count(*) FILTER (WHERE status = 'pending') > 0
ORDER BY queue COLLATE "C", kind COLLATE "C"`

// neverClaimed fills QueueStats.NeverClaimed of qs (sorted by queue).
func (d *Driver) neverClaimed(ctx context.Context, qs []*leasehold.QueueStats) error {
	rs, err := d.pool.Query(ctx, neverClaimedSQL)
	if err != nil {
		return fmt.Errorf("pgdriver: queue stats: %w", err)
	}
	defer rs.Close()
	byQueue := make(map[string]*leasehold.QueueStats, len(qs))
	for _, q := range qs {
		byQueue[q.Queue] = q
	}
	for rs.Next() {
		var (
			queue string
			b     leasehold.KindBacklog
			age   int64
		)
		if err := rs.Scan(&queue, &b.Kind, &b.Due, &age, &b.LiveLeases); err != nil {
			return fmt.Errorf("pgdriver: queue stats: %w", err)
		}
		b.OldestDue = driver.Micros(age)
		if q := byQueue[queue]; q != nil { // a queue created since the first statement is left out
			q.NeverClaimed = append(q.NeverClaimed, &b)
		}
	}
	if err := rs.Err(); err != nil {
		return fmt.Errorf("pgdriver: queue stats: %w", err)
	}
	return nil
}
