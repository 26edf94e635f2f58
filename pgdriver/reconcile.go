package pgdriver

import (
	"context"
	"fmt"

	"github.com/leasehold/leasehold/driver"
)

// resolveSQL applies a resolution in one statement: the reconcile lease
// ($1 id, $2 owner, $3 attempt) held and locked (leaseHeldSQL), the
// reconciling job $4 at attempt $5 moved as the transition says ($6 state,
// $7 keep_run_at, $8 delay µs, $9 finished, $10 free, $11 keep_error,
// $12 error) and $13 recorded as the resolution of that attempt. It
// returns whether the lease was held and whether the job was moved.
const resolveSQL = `WITH lease AS (` + leaseHeldSQL + `
), done AS (
	UPDATE leasehold_jobs j SET
		status = $6::text,
		run_at = CASE WHEN $7::boolean THEN j.run_at
			ELSE statement_timestamp() + $8::bigint * interval '1 microsecond' END,
		finished_at = CASE WHEN $9::boolean THEN statement_timestamp() END,
		free_attempts = j.free_attempts + $10::int,
		last_error = CASE WHEN $11::boolean THEN j.last_error ELSE nullif($12::text, '') END
	FROM lease
	WHERE j.id = $4 AND j.status = 'reconciling' AND j.attempt = $5
	RETURNING j.id, j.attempt
), history AS (
	UPDATE leasehold_attempts a SET resolution = $13::text
	FROM done d
	WHERE a.job_id = d.id AND a.attempt = d.attempt
)
SELECT (SELECT count(*) FROM lease), (SELECT count(*) FROM done)`

// Resolve applies p to its reconciling job, fenced by the reconcile
// lease, in tx when it is non-nil.
func (d *Driver) Resolve(ctx context.Context, tx any, p *driver.ResolveParams) error {
	q, err := d.querierFor(tx)
	if err != nil {
		return err
	}
	if err := driver.ValidateResolve(p); err != nil {
		return fmt.Errorf("pgdriver: %w", err)
	}
	args := append([]any{p.ID, p.Owner, p.LeaseAttempt, p.JobID, p.Attempt}, uniformArgs(p.Transition)[:7]...)
	counts, err := collect(ctx, q, scanPair, resolveSQL, append(args, p.Resolution)...)
	if err != nil {
		return fmt.Errorf("pgdriver: resolve: %w", err)
	}
	switch {
	case counts[0][0] == 0:
		return leaseLost(&driver.FenceParams{ID: p.ID, Owner: p.Owner, Attempt: p.LeaseAttempt})
	case counts[0][1] == 0:
		return errNotReconciling(p.JobID, p.Attempt)
	}
	return nil
}

// scanPair scans two integers.
func scanPair(r scanner) ([2]int64, error) {
	var v [2]int64
	err := r.Scan(&v[0], &v[1])
	return v, err
}
