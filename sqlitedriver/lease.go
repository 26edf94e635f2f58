package sqlitedriver

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// heartbeatSQL renews the fenced leases in ?4 (JSON array of [id, attempt])
// of owner ?3 to now ?1 + TTL ?2.
// The unary + on status keeps the planner from scanning leasehold_jobs_leases
// for every lease: it loops over the JSON array and looks each job up by id.
const heartbeatSQL = `UPDATE leasehold_jobs SET lease_until = ?1 + ?2, heartbeat_at = ?1
FROM (SELECT value->>0 AS rid, value->>1 AS ratt FROM json_each(?4)) AS r
WHERE leasehold_jobs.id = r.rid AND leasehold_jobs.attempt = r.ratt
  AND leasehold_jobs.lease_owner = ?3 AND +leasehold_jobs.status = 'processing'
RETURNING id, cancel_requested`

// Heartbeat renews p.Leases of p.Owner in one fenced UPDATE and returns
// those still held.
func (d *Driver) Heartbeat(ctx context.Context, p *driver.HeartbeatParams) ([]*driver.HeartbeatResult, error) {
	if len(p.Leases) == 0 {
		return nil, nil
	}
	refs := make([][2]int64, len(p.Leases))
	for i, l := range p.Leases {
		refs[i] = [2]int64{l.ID, int64(l.Attempt)}
	}
	arr, err := jsonParam(refs)
	if err != nil {
		return nil, err
	}
	var held []*driver.HeartbeatResult
	err = d.inTx(ctx, func(ctx context.Context, tx *sql.Tx, now int64) error {
		held = nil
		rows, err := d.query(ctx, tx, heartbeatSQL, now, micros(p.TTL), p.Owner, arr)
		if err != nil {
			return fmt.Errorf("sqlitedriver: heartbeat: %w", err)
		}
		defer rows.Close()
		for rows.Next() {
			var h driver.HeartbeatResult
			if err := rows.Scan(&h.ID, &h.CancelRequested); err != nil {
				return fmt.Errorf("sqlitedriver: heartbeat: %w", err)
			}
			held = append(held, &h)
		}
		if err := rows.Err(); err != nil {
			return fmt.Errorf("sqlitedriver: heartbeat: %w", err)
		}
		return nil
	}, heartbeatSQL)
	if err != nil {
		return nil, err
	}
	return held, nil
}

// rescueState is the state an expired lease moves to. ?2 is the JSON array
// of FlagQueues.
const rescueState = `(CASE WHEN cancel_requested THEN 'cancelled'
    WHEN attempt - free_attempts >= max_attempts THEN 'failed'
    WHEN queue IN (SELECT value FROM json_each(?2)) THEN 'stuck'
    ELSE 'pending' END)`

// selectExpiredSQL picks up to ?2 expired leases, with their owners.
const selectExpiredSQL = `SELECT id, lease_owner FROM leasehold_jobs
WHERE status = 'processing' AND lease_until < ?1 ORDER BY lease_until LIMIT ?2 + 0`

// rescueSQL moves the expired leases in ?3 (JSON array of ids); ?1 now.
const rescueSQL = `UPDATE leasehold_jobs SET status = ` + rescueState + `,
    finished_at = CASE WHEN ` + rescueState + ` IN ('cancelled', 'failed') THEN ?1 ELSE finished_at END,
    last_error = 'lease expired (owner ' || IFNULL(lease_owner, '') || ')',
    lease_owner = NULL, lease_until = NULL
WHERE id IN (SELECT value FROM json_each(?3)) AND status = 'processing' AND lease_until < ?1
RETURNING id, queue, kind, attempt, status`

// endRescuedSQL ends the attempts of the rescued jobs in ?2 (JSON array of
// ids), copying the job's last heartbeat and error.
const endRescuedSQL = `UPDATE leasehold_attempts SET ended_at = ?1, outcome = 'lease_expired',
    heartbeat_at = j.heartbeat_at, error = j.last_error
FROM leasehold_jobs AS j
WHERE j.id IN (SELECT value FROM json_each(?2)) AND leasehold_attempts.job_id = j.id
  AND leasehold_attempts.attempt = j.attempt AND leasehold_attempts.ended_at IS NULL`

// RescueExpired moves up to p.Limit (default 1000) expired leases to
// pending, stuck, failed or cancelled and ends their attempts, in one
// BEGIN IMMEDIATE transaction (which also makes the read of the old owners
// atomic with the update).
func (d *Driver) RescueExpired(ctx context.Context, p *driver.RescueParams) ([]*leasehold.RescuedJob, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = 1000
	}
	flag := p.FlagQueues
	if flag == nil {
		flag = []string{}
	}
	flagJSON, err := jsonParam(flag)
	if err != nil {
		return nil, err
	}
	var rescued []*leasehold.RescuedJob
	err = d.inTx(ctx, func(ctx context.Context, tx *sql.Tx, now int64) error {
		var err error
		rescued, err = d.rescue(ctx, tx, now, limit, flagJSON)
		return err
	}, selectExpiredSQL, rescueSQL, endRescuedSQL)
	if err != nil {
		return nil, err
	}
	return rescued, nil
}

// rescue is RescueExpired inside its transaction.
func (d *Driver) rescue(ctx context.Context, tx *sql.Tx, now int64, limit int, flagJSON string) ([]*leasehold.RescuedJob, error) {
	owners, ids, err := d.expiredLeases(ctx, tx, now, limit)
	if err != nil || len(ids) == 0 {
		return nil, err
	}
	idsJSON, err := jsonParam(ids)
	if err != nil {
		return nil, err
	}
	rows, err := d.query(ctx, tx, rescueSQL, now, flagJSON, idsJSON)
	if err != nil {
		return nil, fmt.Errorf("sqlitedriver: rescue: %w", err)
	}
	defer rows.Close()
	var out []*leasehold.RescuedJob
	for rows.Next() {
		var r leasehold.RescuedJob
		var state string
		if err := rows.Scan(&r.ID, &r.Queue, &r.Kind, &r.Attempt, &state); err != nil {
			return nil, fmt.Errorf("sqlitedriver: rescue: %w", err)
		}
		r.NewState = leasehold.JobState(state)
		r.Owner = owners[r.ID]
		out = append(out, &r)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("sqlitedriver: rescue: %w", err)
	}
	if _, err := d.exec(ctx, tx, endRescuedSQL, now, idsJSON); err != nil {
		return nil, fmt.Errorf("sqlitedriver: end rescued attempts: %w", err)
	}
	return out, nil
}

// expiredLeases returns up to limit expired leases: owner by id, and ids.
func (d *Driver) expiredLeases(ctx context.Context, tx *sql.Tx, now int64, limit int) (map[int64]string, []int64, error) {
	rows, err := d.query(ctx, tx, selectExpiredSQL, now, limit)
	if err != nil {
		return nil, nil, fmt.Errorf("sqlitedriver: find expired leases: %w", err)
	}
	defer rows.Close()
	owners := make(map[int64]string)
	var ids []int64
	for rows.Next() {
		var id int64
		var owner sql.NullString
		if err := rows.Scan(&id, &owner); err != nil {
			return nil, nil, fmt.Errorf("sqlitedriver: find expired leases: %w", err)
		}
		owners[id] = owner.String
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		return nil, nil, fmt.Errorf("sqlitedriver: find expired leases: %w", err)
	}
	return owners, ids, nil
}
