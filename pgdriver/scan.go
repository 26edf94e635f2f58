package pgdriver

import (
	"encoding/json"
	"time"

	leasehold "github.com/leasehold/leasehold"
)

// jobColumns selects a leasehold_jobs row (or a CTE returning all its
// columns) in the order scanJob reads it. NULL text becomes ”.
const jobColumns = `id, kind, queue, status, priority, attempt, max_attempts, free_attempts,
	args, metadata, coalesce(unique_key, ''), run_at, created_at, coalesce(lease_owner, ''),
	lease_until, heartbeat_at, finished_at, coalesce(last_error, ''), cancel_requested`

// scanJob reads one row selected with jobColumns. It works with pgx and
// database/sql rows alike.
func scanJob(r scanner) (*leasehold.JobRow, error) {
	var (
		j                            leasehold.JobRow
		status                       string
		args, meta                   []byte
		leaseUntil, heartbeat, ended *time.Time
	)
	err := r.Scan(&j.ID, &j.Kind, &j.Queue, &status, &j.Priority, &j.Attempt, &j.MaxAttempts, &j.FreeAttempts,
		&args, &meta, &j.UniqueKey, &j.RunAt, &j.CreatedAt, &j.LeaseOwner,
		&leaseUntil, &heartbeat, &ended, &j.LastError, &j.CancelRequested)
	if err != nil {
		return nil, err
	}
	j.State = leasehold.JobState(status)
	j.Args = json.RawMessage(args)
	j.Metadata = json.RawMessage(meta)
	j.LeaseUntil = deref(leaseUntil)
	j.HeartbeatAt = deref(heartbeat)
	j.FinishedAt = deref(ended)
	return &j, nil
}

// attemptColumns selects a leasehold_attempts row in scanAttempt's order.
const attemptColumns = `job_id, attempt, owner, claimed_at, heartbeat_at, ended_at,
	coalesce(outcome, ''), coalesce(error, '')`

func scanAttempt(r scanner) (*leasehold.Attempt, error) {
	var (
		a                leasehold.Attempt
		outcome          string
		heartbeat, ended *time.Time
	)
	err := r.Scan(&a.JobID, &a.Attempt, &a.Owner, &a.ClaimedAt, &heartbeat, &ended, &outcome, &a.Error)
	if err != nil {
		return nil, err
	}
	a.Outcome = leasehold.Outcome(outcome)
	a.HeartbeatAt = deref(heartbeat)
	a.EndedAt = deref(ended)
	return &a, nil
}

func scanID(r scanner) (int64, error) {
	var id int64
	err := r.Scan(&id)
	return id, err
}

// deref turns a NULL timestamp into the zero time.
func deref(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}
