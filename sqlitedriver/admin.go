package sqlitedriver

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// retrySQL makes job ?2 pending now (?1) with a fresh retry budget,
// unless it is processing, or completed and ?3 (allow completed) is 0, or
// ?4 (the attempt the caller saw) is not 0 and not its attempt, and clears what its last lease left (owner, expiry, last heartbeat), as
// PostgreSQL's does.
const retrySQL = `UPDATE leasehold_jobs SET status = 'pending', run_at = ?1,
    free_attempts = attempt, finished_at = NULL, cancel_requested = 0,
    lease_owner = NULL, lease_until = NULL, heartbeat_at = NULL
WHERE id = ?2 AND (status IN ('pending', 'stuck', 'reconciling', 'failed', 'cancelled')
    OR status = 'completed' AND ?3) AND (?4 = 0 OR attempt = ?4)
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
// for a completed one without p.Completed, ErrJobChanging for one no
// longer at p.Attempt (when set), ErrJobNotFound for a missing one and
// ErrUniqueKeyHeld for a finished one whose scoped key another
// job holds.
func (d *Driver) RetryJob(ctx context.Context, p *driver.RetryParams) (*leasehold.JobRow, error) {
	var job *leasehold.JobRow
	err := d.inTx(ctx, func(ctx context.Context, tx *sql.Tx, now int64) error {
		var err error
		job, err = scanJob(d.queryRow(ctx, tx, retrySQL, now, p.ID, p.Completed, p.Attempt))
		if errors.Is(err, sql.ErrNoRows) {
			return whyNotRetried(ctx, tx, p.ID, p.Attempt)
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

// whyNotRetried returns ErrJobNotFound, ErrJobChanging, ErrJobCompleted
// or ErrJobRunning for job id. In the retry's transaction, a job the
// update did not match is no longer at attempt (when not 0), processing,
// or completed and not allowed to be retried.
func whyNotRetried(ctx context.Context, tx *sql.Tx, id int64, attempt int) error {
	j, err := getJob(ctx, tx, id)
	if err != nil {
		return err
	}
	if attempt != 0 && j.Attempt != attempt {
		return fmt.Errorf("%w: it ran again since (attempt %d, not %d)", leasehold.ErrJobChanging, j.Attempt, attempt)
	}
	if j.State == leasehold.StateCompleted {
		return leasehold.ErrJobCompleted // the Client names the job
	}
	return leasehold.ErrJobRunning
}

// CancelJob cancels a pending, stuck or reconciling job at once and sets CancelRequested
// on a processing one; a reconcile job's job still reconciling goes to
// stuck with it (strand). For a terminal job it returns the job and
// ErrJobFinished; for a missing one ErrJobNotFound.
func (d *Driver) CancelJob(ctx context.Context, id int64) (*leasehold.JobRow, error) {
	var job *leasehold.JobRow
	err := d.inTx(ctx, func(ctx context.Context, tx *sql.Tx, now int64) error {
		var err error
		if job, err = d.cancelJob(ctx, tx, now, id); err != nil {
			return err
		}
		return d.strand(ctx, tx, job, strandedByCancel)
	}, cancelNowSQL, cancelRequestSQL, strandSQL, strandHistorySQL)
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

// strandSQL sends job ?1, reconciling at attempt ?2, to stuck with
// last_error ?3; strandHistorySQL records ?3 as that attempt's
// resolution.
const (
	strandSQL = `UPDATE leasehold_jobs SET status = 'stuck', last_error = ?3
WHERE id = ?1 AND attempt = ?2 AND status = 'reconciling'`
	strandHistorySQL = `UPDATE leasehold_attempts SET resolution = ?3 WHERE job_id = ?1 AND attempt = ?2`
)

// strandedByCancel and strandedByDelete are the last_error and history
// resolution (formatted with the reconcile job's id) of a job whose
// reconcile job an operator cancelled or deleted before it decided.
const (
	strandedByCancel = "stuck: reconcile job %d was cancelled by an operator before it decided; retry or cancel this job"
	strandedByDelete = "stuck: reconcile job %d was deleted by an operator without having decided; retry or cancel this job"
)

// strand sends the job that rec reconciles to stuck, in tx, when rec is
// a reconcile job (its kind, or the unique key its args rebuild, as
// statemachine.Reconciler knows one) and that job is still reconciling
// at the attempt rec reconciles: an operator cancelled or deleted rec,
// and no job may be left reconciling without a reconcile job to decide
// it. why, formatted with rec's id, is the job's last_error and the
// attempt's resolution. PostgreSQL's strandedSQL is the same rule.
func (d *Driver) strand(ctx context.Context, tx *sql.Tx, rec *leasehold.JobRow, why string) error {
	a, ok := reconciled(rec)
	if !ok {
		return nil
	}
	text := fmt.Sprintf(why, rec.ID)
	res, err := d.exec(ctx, tx, strandSQL, a.JobID, a.Attempt, text)
	if err != nil {
		return fmt.Errorf("sqlitedriver: stuck job %d of reconcile job %d: %w", a.JobID, rec.ID, err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return err
	}
	if _, err := d.exec(ctx, tx, strandHistorySQL, a.JobID, a.Attempt, text); err != nil {
		return fmt.Errorf("sqlitedriver: resolution of job %d: %w", a.JobID, err)
	}
	return nil
}

// reconciled returns the ReconcileArgs of rec when it is a reconcile job
// naming a job and an attempt.
func reconciled(rec *leasehold.JobRow) (leasehold.ReconcileArgs, bool) {
	var a leasehold.ReconcileArgs
	if err := json.Unmarshal(rec.Args, &a); err != nil || a.JobID <= 0 || a.Attempt <= 0 {
		return a, false
	}
	key := "reconcile:" + a.IdempotencyKey + ":" + strconv.Itoa(a.Attempt)
	return a, rec.Kind == leasehold.ReconcileKind || rec.UniqueKey == key
}

// purgeSQL deletes up to ?2 terminal jobs finished before ?1, the oldest
// of every queue first (leasehold_jobs_finished).
const purgeSQL = `DELETE FROM leasehold_jobs WHERE id IN (
    SELECT id FROM leasehold_jobs
    WHERE status IN ('completed', 'failed', 'cancelled') AND finished_at < ?1
    ORDER BY finished_at LIMIT ?2 + 0)
RETURNING id`

// purgeQueuesSQL is purgeSQL for the queues of the JSON array ?3 only,
// through leasehold_jobs_finished_queue_idx in its order (queue, then
// finish time), so that it reads no other queue's jobs and sorts nothing.
const purgeQueuesSQL = `DELETE FROM leasehold_jobs WHERE id IN (
    SELECT id FROM leasehold_jobs
    WHERE status IN ('completed', 'failed', 'cancelled') AND finished_at < ?1
        AND queue IN (SELECT value FROM json_each(?3))
    ORDER BY queue, finished_at LIMIT ?2 + 0)
RETURNING id`

// Purge deletes up to p.Limit (0 means 10000) terminal jobs of p.Queues
// (nil: every queue; empty: none) finished more than p.OlderThan ago, and
// their attempts and checkpoints, in one transaction.
func (d *Driver) Purge(ctx context.Context, p *driver.PurgeParams) (int64, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = 10000
	}
	if p.Queues != nil && len(p.Queues) == 0 {
		return 0, nil
	}
	query, queues := purgeSQL, any(nil)
	if p.Queues != nil {
		var err error
		if queues, err = jsonParam(p.Queues); err != nil {
			return 0, err
		}
		query = purgeQueuesSQL
	}
	var n int64
	err := d.inTx(ctx, func(ctx context.Context, tx *sql.Tx, now int64) error {
		var err error
		n, err = purge(ctx, tx, query, now-micros(p.OlderThan), limit, queues)
		return err
	})
	if err != nil {
		return 0, err
	}
	return n, nil
}

// purge is Purge inside its transaction: query is purgeSQL, or
// purgeQueuesSQL with queues.
func purge(ctx context.Context, tx *sql.Tx, query string, before int64, limit int, queues any) (int64, error) {
	args := []any{before, limit}
	if queues != nil {
		args = append(args, queues)
	}
	rows, err := tx.QueryContext(ctx, query, args...)
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
		return d.strand(ctx, tx, job, strandedByDelete)
	}, deleteSQL, deleteAttemptsSQL, deleteCheckpointsSQL, strandSQL, strandHistorySQL)
	if err != nil && !errors.Is(err, leasehold.ErrJobRunning) && !errors.Is(err, leasehold.ErrJobNotFinished) {
		return nil, err
	}
	return job, err
}
