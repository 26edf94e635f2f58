package pgdriver

import (
	"encoding/json"
	"time"

	"github.com/jackc/pgx/v5/pgtype"

	leasehold "github.com/leasehold/leasehold"
)

// jobColumns selects a leasehold_jobs row (or a CTE returning all its
// columns) in the order scanJob reads it. NULL text becomes ”.
const jobColumns = `id, kind, queue, status, priority, attempt, max_attempts, free_attempts,
	args, metadata, coalesce(unique_key, unique_scoped_key, ''), run_at, created_at, coalesce(lease_owner, ''),
	lease_until, heartbeat_at, finished_at, coalesce(last_error, ''), cancel_requested, uuid`

// jobScan scans the rows of one statement selected with jobColumns. The
// scan destinations are set up once per statement, not per row, and the
// repeated names are interned: a claim's rows cost one JobRow and its two
// JSON documents each. It works with pgx and database/sql rows alike.
type jobScan struct {
	row                             leasehold.JobRow
	status                          string
	args, meta                      []byte
	leaseUntil, heartbeat, finished pgtype.Timestamptz
	uuid                            pgtype.UUID
	dest                            []any
}

func newJobScan(tab *names) *jobScan {
	s := &jobScan{}
	j := &s.row
	s.dest = []any{&j.ID, nameDest{tab, &j.Kind}, nameDest{tab, &j.Queue}, nameDest{tab, &s.status},
		&j.Priority, &j.Attempt, &j.MaxAttempts, &j.FreeAttempts, &s.args, &s.meta, &j.UniqueKey,
		&j.RunAt, &j.CreatedAt, nameDest{tab, &j.LeaseOwner}, &s.leaseUntil, &s.heartbeat, &s.finished,
		&j.LastError, &j.CancelRequested, &s.uuid}
	return s
}

// newClaimScan returns the jobScan of a claim that may take over expired
// leases: its rows have one more column, claimReturnTakenOver's, read
// into JobRow.TakenOver (which scan resets for every row).
func newClaimScan(tab *names) *jobScan {
	s := newJobScan(tab)
	s.dest = append(s.dest, &s.row.TakenOver)
	return s
}

// scan reads the current row into a new JobRow.
func (s *jobScan) scan(r scanner) (*leasehold.JobRow, error) {
	s.row, s.args, s.meta = leasehold.JobRow{}, nil, nil
	if err := r.Scan(s.dest...); err != nil {
		return nil, err
	}
	j := new(leasehold.JobRow)
	*j = s.row
	j.State = leasehold.JobState(s.status)
	j.Args = json.RawMessage(s.args)
	j.Metadata = json.RawMessage(s.meta)
	j.LeaseUntil = s.leaseUntil.Time
	j.HeartbeatAt = s.heartbeat.Time
	j.FinishedAt = s.finished.Time
	j.UUID = s.uuid.String()
	return j, nil
}

// attemptColumns selects a leasehold_attempts row in scanAttempt's order.
const attemptColumns = `job_id, attempt, owner, claimed_at, heartbeat_at, ended_at,
	coalesce(outcome, ''), coalesce(error, ''), coalesce(resolution, '')`

func scanAttempt(r scanner) (*leasehold.Attempt, error) {
	var (
		a                leasehold.Attempt
		outcome          string
		heartbeat, ended *time.Time
	)
	err := r.Scan(&a.JobID, &a.Attempt, &a.Owner, &a.ClaimedAt, &heartbeat, &ended, &outcome, &a.Error, &a.Resolution)
	if err != nil {
		return nil, err
	}
	a.Outcome = leasehold.Outcome(outcome)
	a.HeartbeatAt = deref(heartbeat)
	a.EndedAt = deref(ended)
	return &a, nil
}

// deref turns a NULL timestamp into the zero time.
func deref(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}
