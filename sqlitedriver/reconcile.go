package sqlitedriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// resolveSQL moves reconciling job ?2 at attempt ?3 as the transition
// says (?4 state, ?5 keep_run_at, ?6 delay µs, ?7 free, ?8 finished,
// ?9 keep_error, ?10 error; cancelled instead of pending when its cancel
// was requested, resolveCancels), at ?1, and returns its new state.
const resolveSQL = `UPDATE leasehold_jobs SET
    status = CASE WHEN ` + resolveCancels + ` THEN 'cancelled' ELSE ?4 END,
    run_at = CASE WHEN ?5 OR ` + resolveCancels + ` THEN run_at ELSE ?1 + ?6 END,
    free_attempts = free_attempts + ?7,
    finished_at = CASE WHEN ?8 OR ` + resolveCancels + ` THEN ?1 END,
    last_error = CASE WHEN ?9 THEN last_error ELSE NULLIF(?10, '') END
WHERE id = ?2 AND status = 'reconciling' AND attempt = ?3
RETURNING status`

// resolveCancels holds when a resolution to pending (?4) meets a job
// whose cancel was requested: it is cancelled instead (driver.Driver
// Resolve).
const resolveCancels = `(cancel_requested AND ?4 = 'pending')`

// resolutionSQL records resolution ?3 on attempt ?2 of job ?1.
const resolutionSQL = `UPDATE leasehold_attempts SET resolution = ?3 WHERE job_id = ?1 AND attempt = ?2`

// Resolve applies p to its reconciling job, fenced by the reconcile
// lease, in tx when it is non-nil, else in a transaction of its own, and
// returns the job's new state.
func (d *Driver) Resolve(ctx context.Context, tx any, p *driver.ResolveParams) (leasehold.JobState, error) {
	t, err := asTx(tx)
	if err != nil {
		return "", err
	}
	if err := driver.ValidateResolve(p); err != nil {
		return "", fmt.Errorf("sqlitedriver: %w", err)
	}
	var state leasehold.JobState
	err = d.withTx(ctx, t, func(ctx context.Context, tx *sql.Tx, now int64) error {
		lease := &driver.FenceParams{ID: p.ID, Owner: p.Owner, Attempt: p.LeaseAttempt}
		if err := d.leaseHeld(ctx, tx, lease); err != nil {
			return err
		}
		state, err = d.resolve(ctx, tx, now, p)
		return err
	}, leaseHeldSQL, resolveSQL, resolutionSQL)
	if err != nil {
		return "", err
	}
	return state, nil
}

// resolve moves p's reconciling job and records the resolution (the
// cancelled one when the job was cancelled instead of pending), in tx, and
// returns the job's new state.
func (d *Driver) resolve(ctx context.Context, tx *sql.Tx, now int64, p *driver.ResolveParams) (leasehold.JobState, error) {
	t := p.Transition
	var state leasehold.JobState
	err := d.queryRow(ctx, tx, resolveSQL, now, p.JobID, p.Attempt, string(t.State), flag(t.KeepRunAt),
		micros(t.Delay), flag(t.FreeAttempt), flag(t.Finished), flag(t.KeepLastError), t.LastError).Scan(&state)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("%w: job %d attempt %d", leasehold.ErrNotReconciling, p.JobID, p.Attempt)
	}
	if err != nil {
		return "", fmt.Errorf("sqlitedriver: resolve: %w", err)
	}
	text := p.Resolution
	if state == leasehold.StateCancelled && t.State == leasehold.StatePending && p.CancelledResolution != "" {
		text = p.CancelledResolution
	}
	if _, err := d.exec(ctx, tx, resolutionSQL, p.JobID, p.Attempt, text); err != nil {
		return "", fmt.Errorf("sqlitedriver: record resolution: %w", err)
	}
	return state, nil
}
