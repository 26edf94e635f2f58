package pgdriver

import (
	"context"
	"fmt"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/leasetype"
)

// endedAttemptsSQL reads the history rows of the ended attempts among the
// leases ($1 ids, $2 attempts, pairwise), one primary-key lookup each.
const endedAttemptsSQL = `SELECT a.job_id, a.attempt, a.owner, a.outcome
FROM unnest($1::bigint[], $2::int[]) AS l(id, attempt)
JOIN leasehold_attempts a ON a.job_id = l.id AND a.attempt = l.attempt
WHERE a.ended_at IS NOT NULL AND a.outcome IS NOT NULL`

// EndedAttempts implements driver.EndedReader: it returns the history rows
// of the ended attempts among leases, in one statement.
func (d *Driver) EndedAttempts(ctx context.Context, leases []driver.LeaseRef) ([]driver.EndedAttempt, error) {
	if len(leases) == 0 {
		return nil, nil
	}
	ids, attempts := leaseArrays(leases)
	out, err := collect(ctx, pgxQuerier{d.pool}, scanEndedAttempt, endedAttemptsSQL, ids, attempts)
	if err != nil {
		return nil, fmt.Errorf("pgdriver: read ended attempts: %w", err)
	}
	return out, nil
}

// scanEndedAttempt scans one row of endedAttemptsSQL.
func scanEndedAttempt(r scanner) (driver.EndedAttempt, error) {
	var (
		a       driver.EndedAttempt
		outcome string
	)
	if err := r.Scan(&a.ID, &a.Attempt, &a.Owner, &outcome); err != nil {
		return a, err
	}
	a.Outcome = leasetype.Outcome(outcome)
	return a, nil
}
