package view

import (
	"encoding/json"
	"time"

	"github.com/leasehold/leasehold"
)

// JobView is one job: its state, its retry budget, its arguments and,
// while it is processing, its lease.
type JobView struct {
	ID       int64  `json:"id"`
	Kind     string `json:"kind"`
	Queue    string `json:"queue"`
	Status   string `json:"status"`
	Priority int    `json:"priority"`
	// Attempt counts the claims of the job (the fencing token's second
	// half); MaxAttempts is its retry budget, FreeAttempts the attempts
	// not charged to it (snoozes, releases, attempts before an operator
	// retry).
	Attempt      int             `json:"attempt"`
	MaxAttempts  int             `json:"max_attempts"`
	FreeAttempts int             `json:"free_attempts"`
	Args         json.RawMessage `json:"args"`
	// Metadata is omitted when empty.
	Metadata  json.RawMessage `json:"metadata,omitempty"`
	UniqueKey string          `json:"unique_key,omitempty"`
	RunAt     time.Time       `json:"run_at"`
	CreatedAt time.Time       `json:"created_at"`
	// FinishedAt is set once the job reached a terminal state.
	FinishedAt      *time.Time `json:"finished_at,omitempty"`
	LastError       string     `json:"last_error,omitempty"`
	CancelRequested bool       `json:"cancel_requested,omitempty"`
	// Lease is set while the job is processing.
	Lease *LeaseView `json:"lease,omitempty"`
}

// Waits says what a job in state waits for when no claim will take it:
// "waits for an operator" for a stuck job, "reconciler deciding" for a
// reconciling one, "" for a job in another state. The watcher keeps the
// run_at of the lease that expired, a time now past: shown as a due
// time, it would read as claimable.
func Waits(state leasehold.JobState) string {
	switch state {
	case leasehold.StateStuck:
		return "waits for an operator"
	case leasehold.StateReconciling:
		return "reconciler deciding"
	}
	return ""
}

// Waits says what the job waits for, if no claim will take it (see the
// function Waits).
func (j JobView) Waits() string { return Waits(leasehold.JobState(j.Status)) }

// ChargedAttempts is how many of the job's attempts count against its
// retry budget (MaxAttempts): its claims but those not charged.
func (v JobView) ChargedAttempts() int { return v.Attempt - v.FreeAttempts }

// LeaseView is the lease of a processing job.
type LeaseView struct {
	Owner       string     `json:"owner"`
	Until       time.Time  `json:"until"`
	HeartbeatAt *time.Time `json:"heartbeat_at,omitempty"`
	// LeftSeconds is the time left by the database clock; negative once
	// the lease has expired.
	LeftSeconds float64 `json:"left_seconds"`
	Expired     bool    `json:"expired"`
}

// NewJobView returns the view of j; now is the database clock, against
// which the lease's time left is measured.
func NewJobView(j *leasehold.JobRow, now time.Time) JobView {
	v := JobView{
		ID: j.ID, Kind: j.Kind, Queue: j.Queue, Status: string(j.State), Priority: j.Priority,
		Attempt: j.Attempt, MaxAttempts: j.MaxAttempts, FreeAttempts: j.FreeAttempts,
		Args: j.Args, UniqueKey: j.UniqueKey, RunAt: j.RunAt.UTC(), CreatedAt: j.CreatedAt.UTC(),
		FinishedAt: timePtr(j.FinishedAt), LastError: j.LastError, CancelRequested: j.CancelRequested,
	}
	if len(j.Metadata) > 0 && string(j.Metadata) != "{}" {
		v.Metadata = j.Metadata
	}
	if j.State == leasehold.StateProcessing && j.LeaseOwner != "" {
		left := j.LeaseUntil.Sub(now)
		v.Lease = &LeaseView{
			Owner: j.LeaseOwner, Until: j.LeaseUntil.UTC(), HeartbeatAt: timePtr(j.HeartbeatAt),
			LeftSeconds: left.Seconds(), Expired: left < 0,
		}
	}
	return v
}

// timePtr returns nil for the zero time, so that the field is omitted,
// and t in UTC otherwise: pgx reads a timestamptz in the process's
// zone, sqlitedriver in UTC, and a view is the same whoever renders it.
func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	t = t.UTC()
	return &t
}
