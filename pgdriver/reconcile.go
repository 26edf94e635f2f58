package pgdriver

import (
	"context"
	"fmt"

	leasehold "github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// resolveSQL applies a resolution in one statement: the reconcile lease
// ($1 id, $2 owner, $3 attempt) held and locked (leaseHeldSQL), the
// reconciling job $4 at attempt $5 moved as the transition says ($6 state,
// $7 keep_run_at, $8 delay µs, $9 finished, $10 free, $11 keep_error,
// $12 error; cancelled instead of pending when its cancel was requested,
// resolveCancels) and $13 recorded as the resolution of that attempt, or
// $14 when the job was so cancelled and $14 is not empty. It returns
// whether the lease was held, whether the job was moved, and its new
// state.
const resolveSQL = `WITH lease AS (` + leaseHeldSQL + `
), done AS (
	UPDATE leasehold_jobs j SET
		status = CASE WHEN ` + resolveCancels + ` THEN 'cancelled' ELSE $6::text END,
		run_at = CASE WHEN $7::boolean OR ` + resolveCancels + ` THEN j.run_at
			ELSE statement_timestamp() + $8::bigint * interval '1 microsecond' END,
		finished_at = CASE WHEN $9::boolean OR ` + resolveCancels + ` THEN statement_timestamp() END,
		free_attempts = j.free_attempts + $10::int,
		last_error = CASE WHEN $11::boolean THEN j.last_error ELSE nullif($12::text, '') END
	FROM lease
	WHERE j.id = $4 AND j.status = 'reconciling' AND j.attempt = $5
	RETURNING j.id, j.attempt, j.status
), history AS (
	UPDATE leasehold_attempts a
	SET resolution = CASE WHEN d.status = 'cancelled' AND $6::text = 'pending' AND $14::text <> '' THEN $14
		ELSE $13::text END
	FROM done d
	WHERE a.job_id = d.id AND a.attempt = d.attempt
)
SELECT (SELECT count(*) FROM lease), (SELECT count(*) FROM done), coalesce((SELECT status FROM done), '')`

// resolveCancels holds when a resolution to pending ($6) meets a job
// whose cancel was requested: it is cancelled instead (driver.Driver
// Resolve).
const resolveCancels = `(j.cancel_requested AND $6::text = 'pending')`

// Resolve applies p to its reconciling job, fenced by the reconcile
// lease, in tx when it is non-nil, and returns the job's new state.
func (d *Driver) Resolve(ctx context.Context, tx any, p *driver.ResolveParams) (leasehold.JobState, error) {
	q, err := d.querierFor(tx)
	if err != nil {
		return "", err
	}
	if err := driver.ValidateResolve(p); err != nil {
		return "", fmt.Errorf("pgdriver: %w", err)
	}
	args := append([]any{p.ID, p.Owner, p.LeaseAttempt, p.JobID, p.Attempt}, uniformArgs(p.Transition)[:7]...)
	rs, err := collect(ctx, q, scanResolved, resolveSQL, append(args, p.Resolution, p.CancelledResolution)...)
	if err != nil {
		return "", fmt.Errorf("pgdriver: resolve: %w", err)
	}
	switch r := rs[0]; {
	case r.leases == 0:
		return "", leaseLost(&driver.FenceParams{ID: p.ID, Owner: p.Owner, Attempt: p.LeaseAttempt})
	case r.moved == 0:
		return "", errNotReconciling(p.JobID, p.Attempt)
	default:
		return r.state, nil
	}
}

// resolved is resolveSQL's row.
type resolved struct {
	leases, moved int64
	state         leasehold.JobState
}

// scanResolved scans resolveSQL's row.
func scanResolved(r scanner) (resolved, error) {
	var v resolved
	err := r.Scan(&v.leases, &v.moved, &v.state)
	return v, err
}

// scanPair scans two integers.
func scanPair(r scanner) ([2]int64, error) {
	var v [2]int64
	err := r.Scan(&v[0], &v[1])
	return v, err
}
