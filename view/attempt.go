package view

import (
	"time"

	"github.com/leasehold/leasehold"
)

// AttemptView is one row of a job's attempt history: one lease, from its
// claim to its end.
type AttemptView struct {
	Attempt     int        `json:"attempt"`
	Owner       string     `json:"owner"`
	ClaimedAt   time.Time  `json:"claimed_at"`
	HeartbeatAt *time.Time `json:"heartbeat_at,omitempty"`
	EndedAt     *time.Time `json:"ended_at,omitempty"`
	// Outcome is "running" while the attempt has not ended (see
	// OutcomeName).
	Outcome string `json:"outcome"`
	Error   string `json:"error,omitempty"`
	// Resolution is a reconciler's decision on an attempt whose lease
	// expired in a reconciling queue, as recorded on it ("completed by
	// reconcile job 125 (attempt 1): provider charged"); empty otherwise.
	Resolution string `json:"resolution,omitempty"`
}

// JobInfoView is a job with its attempt history, oldest attempt first.
type JobInfoView struct {
	JobView
	// Attempts is empty, never null, for a job not claimed yet.
	Attempts []AttemptView `json:"attempts"`
}

// NewJobInfoView returns the view of a job and its history; now is the
// database clock.
func NewJobInfoView(info *leasehold.JobInfo, now time.Time) JobInfoView {
	v := JobInfoView{JobView: NewJobView(info.JobRow, now), Attempts: []AttemptView{}}
	for _, a := range info.Attempts {
		v.Attempts = append(v.Attempts, AttemptView{
			Attempt: a.Attempt, Owner: a.Owner, ClaimedAt: a.ClaimedAt.UTC(),
			HeartbeatAt: timePtr(AttemptHeartbeat(info.JobRow, a)), EndedAt: timePtr(a.EndedAt),
			Outcome: OutcomeName(a.Outcome), Error: a.Error, Resolution: a.Resolution,
		})
	}
	return v
}

// OutcomeName is how an attempt's outcome is shown: its recorded name, or
// "running" for an attempt that has not ended (whose outcome is empty).
func OutcomeName(o leasehold.Outcome) string {
	if o == leasehold.OutcomeRunning {
		return "running"
	}
	return string(o)
}

// AttemptHeartbeat is the last heartbeat of attempt a of job j. The
// history row gets it when the attempt ends; while the attempt runs, the
// job row holds it, so the lease and the attempt show the same time.
func AttemptHeartbeat(j *leasehold.JobRow, a *leasehold.Attempt) time.Time {
	if a.Outcome == leasehold.OutcomeRunning && a.Attempt == j.Attempt && j.State == leasehold.StateProcessing &&
		a.HeartbeatAt.IsZero() {
		return j.HeartbeatAt
	}
	return a.HeartbeatAt
}
