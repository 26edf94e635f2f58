package sqlitedriver

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

// dueOf holds when the queue named by column has a due pending job of
// kinds ?1 (JSON array): one descent of leasehold_jobs_ready. The index
// is named: with statistics that show one queue, SQLite otherwise plans
// the EXISTS as a scan of the table in rowid order, which in a drain
// walks every finished job before it reaches the first pending one,
// holding the only connection (10 ms a probe at 100,000 jobs).
func dueOf(column string) string {
	return `EXISTS (SELECT 1 FROM leasehold_jobs j INDEXED BY leasehold_jobs_ready
        WHERE j.status = 'pending' AND j.queue = ` + column + ` AND j.run_at <= ` + nowExpr + `
          AND j.kind IN (SELECT value FROM json_each(?1)))
      AND ` + notPausedOf(column)
}

// claimableExpired is the queues with an expired lease of kinds ?1 that a
// claim of owner ?2 may take over (never its own), through
// leasehold_jobs_leases.
var claimableExpired = `
UNION ALL
SELECT DISTINCT j.queue, 1 FROM leasehold_jobs j
WHERE j.status = 'processing' AND j.lease_until < ` + nowExpr + ` AND NOT j.cancel_requested
  AND j.attempt - j.free_attempts < j.max_attempts AND j.lease_owner <> ?2
  AND j.kind IN (SELECT value FROM json_each(?1)) AND ` + notPausedOf("j.queue")

// claimableEachSQL looks up each queue of ?3 (JSON array).
var claimableEachSQL = `SELECT q.value, 0 FROM json_each(?3) q WHERE ` + dueOf("q.value") + claimableExpired

// claimableScanSQL walks the distinct queues of leasehold_jobs_ready (one
// descent per queue that has pending jobs) and keeps those with a due job;
// the caller keeps its own queues.
var claimableScanSQL = `WITH RECURSIVE pq(queue) AS (
    SELECT (SELECT queue FROM leasehold_jobs WHERE status = 'pending' ORDER BY queue LIMIT 1)
    UNION ALL
    SELECT (SELECT j.queue FROM leasehold_jobs j WHERE j.status = 'pending' AND j.queue > pq.queue
        ORDER BY j.queue LIMIT 1)
    FROM pq WHERE pq.queue IS NOT NULL
)
SELECT pq.queue, 0 FROM pq WHERE pq.queue IS NOT NULL AND ` + dueOf("pq.queue") + claimableExpired

// ClaimableQueues returns which of p.Queues have work a Claim of p.Kinds
// would lease now, in one read outside the write lock: a lookup per queue
// for a few queues, a walk of the queues with pending jobs for many
// (driver.ClaimableScan).
func (d *Driver) ClaimableQueues(ctx context.Context, p *driver.ClaimableParams) ([]string, error) {
	if len(p.Queues) == 0 || len(p.Kinds) == 0 {
		return nil, nil
	}
	kinds, err := jsonParam(p.Kinds)
	if err != nil {
		return nil, err
	}
	query, args := claimableScanSQL, []any{kinds, p.Owner}
	if !driver.ClaimableScan(p) {
		queues, err := jsonParam(slices.Collect(maps.Keys(p.Queues)))
		if err != nil {
			return nil, err
		}
		query, args = claimableEachSQL, append(args, queues)
	}
	found, err := d.candidates(ctx, query, args...)
	if err != nil {
		return nil, d.wrapErr(fmt.Errorf("sqlitedriver: claimable queues: %w", err))
	}
	return driver.Claimable(p, found), nil
}

// candidates runs query, whose rows are (queue, expired).
func (d *Driver) candidates(ctx context.Context, query string, args ...any) ([]driver.Candidate, error) {
	rows, err := d.dbQuery(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []driver.Candidate
	for rows.Next() {
		var c driver.Candidate
		if err := rows.Scan(&c.Queue, &c.Expired); err != nil {
			return nil, err
		}
		out = append(out, c)
	}
	return out, rows.Err()
}
