package sqlitedriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// retrySQL makes job ?2 pending now (?1) with a fresh retry budget,
// unless it is processing, or completed and ?3 (allow completed) is 0,
// and clears what its last lease left (owner, expiry, last heartbeat), as
// PostgreSQL's does.
const retrySQL = `UPDATE leasehold_jobs SET status = 'pending', run_at = ?1,
    free_attempts = attempt, finished_at = NULL, cancel_requested = 0,
    lease_owner = NULL, lease_until = NULL, heartbeat_at = NULL
WHERE id = ?2 AND (status IN ('pending', 'stuck', 'reconciling', 'failed', 'cancelled')
    OR status = 'completed' AND ?3)
RETURNING ` + jobCols

// cancelNowSQL cancels a pending, stuck or reconciling job ?2 at once.
const cancelNowSQL = `UPDATE leasehold_jobs SET status = 'cancelled', finished_at = ?1
WHERE id = ?2 AND status IN ('pending', 'stuck', 'reconciling')
RETURNING ` + jobCols

// cancelRequestSQL asks the holder of processing job ?1 to stop.
const cancelRequestSQL = `UPDATE leasehold_jobs SET cancel_requested = 1
WHERE id = ?1 AND status = 'processing'
RETURNING ` + jobCols

// RetryJob makes job p.ID, pending, stuck, reconciling, failed, cancelled
// or (with p.Completed) completed, pending now with FreeAttempts =
// Attempt. It returns ErrJobRunning for a processing job, ErrJobCompleted
// for a completed one without p.Completed, ErrJobNotFound for a missing
// one and ErrUniqueKeyHeld for a finished one whose scoped key another
// job holds.
func (d *Driver) RetryJob(ctx context.Context, p *driver.RetryParams) (*leasehold.JobRow, error) {
	var job *leasehold.JobRow
	err := d.inTx(ctx, func(ctx context.Context, tx *sql.Tx, now int64) error {
		var err error
		job, err = scanJob(d.queryRow(ctx, tx, retrySQL, now, p.ID, p.Completed))
		if errors.Is(err, sql.ErrNoRows) {
			return whyNotRetried(ctx, tx, p.ID)
		}
		if scopedKeyTaken(err) {
			return fmt.Errorf("%w: %w", leasehold.ErrUniqueKeyHeld, err)
		}
		if err != nil {
			return fmt.Errorf("sqlitedriver: %w", err)
		}
		return nil
	}, retrySQL)
	if err != nil {
		return nil, err
	}
	return job, nil
}

// whyNotRetried returns ErrJobNotFound, ErrJobCompleted or ErrJobRunning
// for job id. In the retry's transaction, a job the update did not match
// is processing, or completed and not allowed to be retried.
func whyNotRetried(ctx context.Context, tx *sql.Tx, id int64) error {
	j, err := getJob(ctx, tx, id)
	if err != nil {
		return err
	}
	if j.State == leasehold.StateCompleted {
		return leasehold.ErrJobCompleted // the Client names the job
	}
	return leasehold.ErrJobRunning
}

// CancelJob cancels a pending, stuck or reconciling job at once and sets CancelRequested
// on a processing one. For a terminal job it returns the job and
// ErrJobFinished; for a missing one ErrJobNotFound.
func (d *Driver) CancelJob(ctx context.Context, id int64) (*leasehold.JobRow, error) {
	var job *leasehold.JobRow
	err := d.inTx(ctx, func(ctx context.Context, tx *sql.Tx, now int64) error {
		var err error
		job, err = d.cancelJob(ctx, tx, now, id)
		return err
	}, cancelNowSQL, cancelRequestSQL)
	if err != nil && !errors.Is(err, leasehold.ErrJobFinished) {
		return nil, err
	}
	return job, err
}

// cancelJob is CancelJob inside its transaction.
func (d *Driver) cancelJob(ctx context.Context, tx *sql.Tx, now, id int64) (*leasehold.JobRow, error) {
	job, err := scanJob(d.queryRow(ctx, tx, cancelNowSQL, now, id))
	if errors.Is(err, sql.ErrNoRows) {
		job, err = scanJob(d.queryRow(ctx, tx, cancelRequestSQL, id))
	}
	if err == nil {
		return job, nil
	}
	if !errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("sqlitedriver: %w", err)
	}
	job, err = getJob(ctx, tx, id)
	if err != nil {
		return nil, err
	}
	return job, leasehold.ErrJobFinished // the Client names the job
}

// purgeSQL deletes up to ?2 terminal jobs finished before ?1.
const purgeSQL = `DELETE FROM leasehold_jobs WHERE id IN (
    SELECT id FROM leasehold_jobs
    WHERE status IN ('completed', 'failed', 'cancelled') AND finished_at < ?1
    ORDER BY finished_at LIMIT ?2 + 0)
RETURNING id`

// Purge deletes up to p.Limit (0 means 10000) terminal jobs finished more
// than p.OlderThan ago, and their attempts, in one transaction.
func (d *Driver) Purge(ctx context.Context, p *driver.PurgeParams) (int64, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = 10000
	}
	var n int64
	err := d.inTx(ctx, func(ctx context.Context, tx *sql.Tx, now int64) error {
		var err error
		n, err = purge(ctx, tx, now-micros(p.OlderThan), limit)
		return err
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// purge is Purge inside its transaction.
func purge(ctx context.Context, tx *sql.Tx, before int64, limit int) (int64, error) {
	rows, err := tx.QueryContext(ctx, purgeSQL, before, limit)
	if err != nil {
		return 0, fmt.Errorf("sqlitedriver: purge: %w", err)
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return 0, fmt.Errorf("sqlitedriver: purge: %w", err)
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("sqlitedriver: purge: %w", err)
	}
	if len(ids) == 0 {
		return 0, nil
	}
	arr, err := jsonParam(ids)
	if err != nil {
		return 0, err
	}
	_, err = tx.ExecContext(ctx,
		`DELETE FROM leasehold_attempts WHERE job_id IN (SELECT value FROM json_each(?))`, arr)
	if err != nil {
		return 0, fmt.Errorf("sqlitedriver: purge attempts: %w", err)
	}
	_, err = tx.ExecContext(ctx,
		`DELETE FROM leasehold_checkpoints WHERE job_id IN (SELECT value FROM json_each(?))`, arr)
	if err != nil {
		return 0, fmt.Errorf("sqlitedriver: purge checkpoints: %w", err)
	}
	return int64(len(ids)), nil
}

// deleteSQL deletes finished job ?1; deleteAttemptsSQL its history and
// deleteCheckpointsSQL its checkpoints.
const (
	deleteSQL = `DELETE FROM leasehold_jobs
WHERE id = ?1 AND status IN ('completed', 'failed', 'cancelled')
RETURNING ` + jobCols
	deleteAttemptsSQL    = `DELETE FROM leasehold_attempts WHERE job_id = ?1`
	deleteCheckpointsSQL = `DELETE FROM leasehold_checkpoints WHERE job_id = ?1`
)

// DeleteJob deletes a finished job and its history in one transaction.
// For an unfinished job it returns the job and ErrJobRunning
// (processing) or ErrJobNotFinished (pending, stuck, reconciling); for a
// missing one ErrJobNotFound.
func (d *Driver) DeleteJob(ctx context.Context, id int64) (*leasehold.JobRow, error) {
	var job *leasehold.JobRow
	err := d.inTx(ctx, func(ctx context.Context, tx *sql.Tx, _ int64) error {
		var err error
		job, err = scanJob(d.queryRow(ctx, tx, deleteSQL, id))
		if errors.Is(err, sql.ErrNoRows) {
			if job, err = getJob(ctx, tx, id); err != nil {
				return err
			}
			if job.State == leasehold.StateProcessing {
				return leasehold.ErrJobRunning // the Client names the job
			}
			return leasehold.ErrJobNotFinished
		}
		if err != nil {
			return fmt.Errorf("sqlitedriver: delete job: %w", err)
		}
		if _, err := d.exec(ctx, tx, deleteAttemptsSQL, id); err != nil {
			return fmt.Errorf("sqlitedriver: delete job history: %w", err)
		}
		if _, err := d.exec(ctx, tx, deleteCheckpointsSQL, id); err != nil {
			return fmt.Errorf("sqlitedriver: delete job checkpoints: %w", err)
		}
		return nil
	}, deleteSQL, deleteAttemptsSQL, deleteCheckpointsSQL)
	if err != nil && !errors.Is(err, leasehold.ErrJobRunning) && !errors.Is(err, leasehold.ErrJobNotFinished) {
		return nil, err
	}
	return job, err
}
