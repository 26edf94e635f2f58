package sqlitedriver

import (
	"context"

	leasehold "github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// activeStatsSQL is queueStatsSQL for the unfinished states (through
// leasehold_jobs_queue_status). SQLite has no planner estimate to read,
// and an embedded database's backlog is counted fast enough: its counts
// are exact whatever the limit.
const activeStatsSQL = `SELECT queue, status, count(*), NULL, 0, 0
    FROM leasehold_jobs WHERE status NOT IN ('completed', 'failed', 'cancelled')
    GROUP BY queue, status` + queueStatsAges

// activeUnclaimedSQL is neverClaimedSQL counted among each queue's first
// ?2 due jobs in claim order.
const activeUnclaimedSQL = `WITH head AS (
    SELECT queue, kind, run_at, attempt,
        row_number() OVER (PARTITION BY queue ORDER BY priority, run_at, id) AS n
    FROM leasehold_jobs WHERE status = 'pending' AND run_at <= ?1
), unclaimed AS (
    SELECT queue, kind, count(*) AS due, min(run_at) AS oldest FROM head
    WHERE n <= ?2 AND attempt = 0 GROUP BY queue, kind
)
SELECT u.queue, u.kind, u.due, u.oldest,
    (SELECT count(*) FROM leasehold_jobs j WHERE j.status = 'processing'
        AND j.lease_until >= ?1 AND j.queue = u.queue AND j.kind = u.kind)
FROM unclaimed u ORDER BY u.queue, u.kind`

// ActiveQueueStats returns QueueStats for the unfinished jobs of each
// queue that has some or is paused; NeverClaimed is counted among the
// queue's first min(p.CountLimit, driver.DefaultUnclaimedSample) due
// jobs in claim order. Counts are exact.
func (d *Driver) ActiveQueueStats(ctx context.Context, p *driver.ActiveStatsParams) ([]*leasehold.QueueStats, error) {
	limit := driver.DefaultCountLimit
	if p != nil && p.CountLimit > 0 {
		limit = p.CountLimit
	}
	now, err := d.Now(ctx)
	if err != nil {
		return nil, err
	}
	return d.queueStats(ctx, now.UnixMicro(), activeStatsSQL, activeUnclaimedSQL, min(limit, driver.DefaultUnclaimedSample))
}
