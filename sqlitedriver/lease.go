package sqlitedriver

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/leasehold/leasehold/driver"
)

// heartbeatSQL renews the fenced leases of lease set ?4 (see leaseRowsFrom)
// of owner ?3 to now ?1 + TTL ?2.
// The unary + on status keeps the planner from scanning leasehold_jobs_leases
// for every lease: it loops over the lease set and looks each job up by id.
const heartbeatSQL = `UPDATE leasehold_jobs SET lease_until = ?1 + ?2, heartbeat_at = ?1
FROM ` + leaseRowsFrom + `?4` + leaseRowsTo + `
WHERE leasehold_jobs.id = r.rid AND leasehold_jobs.attempt = r.ratt
  AND leasehold_jobs.lease_owner = ?3 AND +leasehold_jobs.status = 'processing'
RETURNING id, cancel_requested`

// Heartbeat renews p.Leases of p.Owner in one fenced UPDATE and returns
// those still held.
func (d *Driver) Heartbeat(ctx context.Context, p *driver.HeartbeatParams) ([]*driver.HeartbeatResult, error) {
	if len(p.Leases) == 0 {
		return nil, nil
	}
	leases := make([][2]int64, len(p.Leases))
	for i, l := range p.Leases {
		leases[i] = [2]int64{l.ID, int64(l.Attempt)}
	}
	arr := string(appendLeaseSet(nil, leases))
	var held []*driver.HeartbeatResult
	err := d.inTx(ctx, func(ctx context.Context, tx *sql.Tx, now int64) error {
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
