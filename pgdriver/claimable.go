package pgdriver

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/leasehold/leasehold/driver"
)

// notPausedOf holds unless the queue named by column is paused.
func notPausedOf(column string) string {
	return `NOT EXISTS (SELECT 1 FROM leasehold_queues p WHERE p.name = ` + column + ` AND p.paused_at IS NOT NULL)`
}

// dueOf is a lateral join that keeps a queue (column) with a due pending
// job of kinds $1: one descent of leasehold_jobs_ready_idx, stopped at the
// first such job. LIMIT 1 keeps it a per-queue lookup, never a scan of
// every ready job.
func dueOf(column string) string {
	return `CROSS JOIN LATERAL (SELECT 1 FROM leasehold_jobs j
	WHERE j.status = 'pending' AND j.queue = ` + column + ` AND j.run_at <= now() AND j.kind = ANY($1::text[])
	LIMIT 1) due
WHERE ` + notPausedOf(column)
}

// claimableExpired is the queues with an expired lease of kinds $1 that a
// claim of owner $2 may take over (never its own), through
// leasehold_jobs_lease_idx (the expired leases only).
var claimableExpired = `
UNION ALL
SELECT DISTINCT j.queue, true FROM leasehold_jobs j
WHERE ` + takeOverCond + ` AND j.lease_owner <> $2 AND j.kind = ANY($1::text[]) AND ` + notPausedOf("j.queue")

// claimableEachSQL looks up each queue of $3: one index descent per queue.
var claimableEachSQL = `SELECT q.name, false FROM unnest($3::text[]) AS q(name)
` + dueOf("q.name") + claimableExpired

// claimableScanSQL walks the distinct queues of leasehold_jobs_ready_idx
// (a loose index scan: one descent per queue that has pending jobs,
// whatever their number) and keeps those with a due job; the caller keeps
// its own queues.
var claimableScanSQL = `WITH RECURSIVE pq(queue) AS (
	(SELECT queue FROM leasehold_jobs WHERE status = 'pending' ORDER BY queue LIMIT 1)
	UNION ALL
	SELECT (SELECT j.queue FROM leasehold_jobs j WHERE j.status = 'pending' AND j.queue > pq.queue
		ORDER BY j.queue LIMIT 1)
	FROM pq WHERE pq.queue IS NOT NULL
)
SELECT pq.queue, false FROM pq
` + dueOf("pq.queue") + claimableExpired

// ClaimableQueues returns which of p.Queues have work a Claim of p.Kinds
// would lease now, in one read-only statement: a lookup per queue for a
// few queues, a loose index scan of the queues with pending jobs for many
// (driver.ClaimableScan).
func (d *Driver) ClaimableQueues(ctx context.Context, p *driver.ClaimableParams) ([]string, error) {
	if len(p.Queues) == 0 || len(p.Kinds) == 0 {
		return nil, nil
	}
	query, args := claimableScanSQL, []any{p.Kinds, p.Owner}
	if !driver.ClaimableScan(p) {
		query, args = claimableEachSQL, append(args, slices.Collect(maps.Keys(p.Queues)))
	}
	found, err := collect(ctx, pgxQuerier{d.pool}, scanCandidate, query, args...)
	if err != nil {
		return nil, fmt.Errorf("pgdriver: claimable queues: %w", err)
	}
	return driver.Claimable(p, found), nil
}

func scanCandidate(r scanner) (driver.Candidate, error) {
	var c driver.Candidate
	err := r.Scan(&c.Queue, &c.Expired)
	return c, err
}
