package sqlitedriver

import (
	"context"
	"fmt"

	"github.com/leasehold/leasehold/driver"
)

// endedAttemptsSQL reads the history rows of the ended attempts among the
// leases in ?1, a JSON array of [id, attempt] pairs: one primary-key
// lookup each.
const endedAttemptsSQL = `SELECT a.job_id, a.attempt, a.owner, a.outcome
FROM (SELECT value->>0 AS rid, value->>1 AS ratt FROM json_each(?1)) AS r
JOIN leasehold_attempts AS a ON a.job_id = r.rid AND a.attempt = r.ratt
WHERE a.ended_at IS NOT NULL AND a.outcome IS NOT NULL`

// EndedAttempts implements driver.EndedReader: it returns the history rows
// of the ended attempts among leases, in one statement.
func (d *Driver) EndedAttempts(ctx context.Context, leases []driver.LeaseRef) ([]driver.EndedAttempt, error) {
	if len(leases) == 0 {
		return nil, nil
	}
	arr, err := leasePairsParam(leases)
	if err != nil {
		return nil, err
	}
	out, err := d.readEnded(ctx, arr)
	if err != nil {
		return nil, d.wrapErr(fmt.Errorf("sqlitedriver: read ended attempts: %w", err))
	}
	return out, nil
}

// readEnded runs endedAttemptsSQL for the leases arr and scans its rows.
func (d *Driver) readEnded(ctx context.Context, arr string) ([]driver.EndedAttempt, error) {
	return scanEndedRows(d.dbQuery(ctx, endedAttemptsSQL, arr))
}

// leasePairsParam returns leases as endedAttemptsSQL's ?1: a JSON array
// of [id, attempt] pairs.
func leasePairsParam(leases []driver.LeaseRef) (string, error) {
	pairs := make([][2]int64, len(leases))
	for i, l := range leases {
		pairs[i] = [2]int64{l.ID, int64(l.Attempt)}
	}
	return jsonParam(pairs)
}
