package cli

import (
	"encoding/json"
	"time"

	"github.com/leasehold/leasehold"
)

// JobView is a job as the command prints it with --json.
type JobView struct {
	ID              int64           `json:"id"`
	Kind            string          `json:"kind"`
	Queue           string          `json:"queue"`
	Status          string          `json:"status"`
	Priority        int             `json:"priority"`
	Attempt         int             `json:"attempt"`
	MaxAttempts     int             `json:"max_attempts"`
	FreeAttempts    int             `json:"free_attempts"`
	Args            json.RawMessage `json:"args"`
	Metadata        json.RawMessage `json:"metadata,omitempty"`
	UniqueKey       string          `json:"unique_key,omitempty"`
	RunAt           time.Time       `json:"run_at"`
	CreatedAt       time.Time       `json:"created_at"`
	FinishedAt      *time.Time      `json:"finished_at,omitempty"`
	LastError       string          `json:"last_error,omitempty"`
	CancelRequested bool            `json:"cancel_requested,omitempty"`
	// Lease is set while the job is processing.
	Lease *LeaseView `json:"lease,omitempty"`
}

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

// AttemptView is one row of a job's attempt history.
type AttemptView struct {
	Attempt     int        `json:"attempt"`
	Owner       string     `json:"owner"`
	ClaimedAt   time.Time  `json:"claimed_at"`
	HeartbeatAt *time.Time `json:"heartbeat_at,omitempty"`
	EndedAt     *time.Time `json:"ended_at,omitempty"`
	// Outcome is "running" while the attempt has not ended.
	Outcome string `json:"outcome"`
	Error   string `json:"error,omitempty"`
}

// JobInfoView is a job with its attempt history.
type JobInfoView struct {
	JobView
	Attempts []AttemptView `json:"attempts"`
}

// QueueView summarises one queue.
type QueueView struct {
	Queue                string           `json:"queue"`
	Counts               map[string]int64 `json:"counts"`
	OldestPendingSeconds float64          `json:"oldest_pending_seconds"`
	LiveLeases           int64            `json:"live_leases"`
	ExpiredLeases        int64            `json:"expired_leases"`
	// NeverClaimed lists, per kind, the due jobs no worker ever claimed.
	NeverClaimed []KindBacklogView `json:"never_claimed"`
}

// KindBacklogView is the never-claimed due work of one kind in a queue.
type KindBacklogView struct {
	Kind             string  `json:"kind"`
	Due              int64   `json:"due"`
	OldestDueSeconds float64 `json:"oldest_due_seconds"`
	LiveLeases       int64   `json:"live_leases"`
	// Suspect is set when the oldest has waited past the threshold and
	// the kind has no live lease: probably no running worker handles it.
	Suspect bool `json:"suspect"`
}

// RescuedView is a job the stuck watcher moved.
type RescuedView struct {
	ID      int64  `json:"id"`
	Kind    string `json:"kind"`
	Queue   string `json:"queue"`
	Attempt int    `json:"attempt"`
	Owner   string `json:"owner"`
	Status  string `json:"status"`
}

// StatsView is a worker's counters, as `leasehold work --json` prints
// them when it stops.
type StatsView struct {
	Owner         string `json:"owner"`
	Claimed       int64  `json:"claimed"`
	Completed     int64  `json:"completed"`
	Retried       int64  `json:"retried"`
	Failed        int64  `json:"failed"`
	Snoozed       int64  `json:"snoozed"`
	Cancelled     int64  `json:"cancelled"`
	Released      int64  `json:"released"`
	LeaseLost     int64  `json:"lease_lost"`
	FinishRefused int64  `json:"finish_refused"`
	// OutcomesDropped: outcomes given up unwritten (see leasehold.Stats).
	OutcomesDropped int64 `json:"outcomes_dropped"`
	Rescued         int64 `json:"rescued"`
	Panics          int64 `json:"panics"`
	// SkippedLate: claimed jobs not started because the claim's reply came
	// too late for a safe run (see leasehold.Stats).
	SkippedLate int64 `json:"skipped_late"`
}

// NewJobView converts a job; now is the database clock.
func NewJobView(j *leasehold.JobRow, now time.Time) JobView {
	v := JobView{
		ID: j.ID, Kind: j.Kind, Queue: j.Queue, Status: string(j.State), Priority: j.Priority,
		Attempt: j.Attempt, MaxAttempts: j.MaxAttempts, FreeAttempts: j.FreeAttempts,
		Args: j.Args, UniqueKey: j.UniqueKey, RunAt: j.RunAt, CreatedAt: j.CreatedAt,
		FinishedAt: timePtr(j.FinishedAt), LastError: j.LastError, CancelRequested: j.CancelRequested,
	}
	if len(j.Metadata) > 0 && string(j.Metadata) != "{}" {
		v.Metadata = j.Metadata
	}
	if j.State == leasehold.StateProcessing && j.LeaseOwner != "" {
		left := j.LeaseUntil.Sub(now)
		v.Lease = &LeaseView{
			Owner: j.LeaseOwner, Until: j.LeaseUntil, HeartbeatAt: timePtr(j.HeartbeatAt),
			LeftSeconds: left.Seconds(), Expired: left < 0,
		}
	}
	return v
}

// NewJobInfoView converts a job and its history.
func NewJobInfoView(info *leasehold.JobInfo, now time.Time) JobInfoView {
	v := JobInfoView{JobView: NewJobView(info.JobRow, now), Attempts: []AttemptView{}}
	for _, a := range info.Attempts {
		outcome := string(a.Outcome)
		if a.Outcome == leasehold.OutcomeRunning {
			outcome = "running"
		}
		v.Attempts = append(v.Attempts, AttemptView{
			Attempt: a.Attempt, Owner: a.Owner, ClaimedAt: a.ClaimedAt,
			HeartbeatAt: timePtr(AttemptHeartbeat(info.JobRow, a)), EndedAt: timePtr(a.EndedAt),
			Outcome: outcome, Error: a.Error,
		})
	}
	return v
}

// NewQueueView converts queue statistics; every status has a count.
// A kind is suspect when its oldest never-claimed due job has waited
// longer than unclaimedAfter and it has no live lease.
func NewQueueView(q *leasehold.QueueStats, unclaimedAfter time.Duration) QueueView {
	v := QueueView{
		Queue: q.Queue, Counts: map[string]int64{}, OldestPendingSeconds: q.OldestPending.Seconds(),
		LiveLeases: q.LiveLeases, ExpiredLeases: q.ExpiredLeases, NeverClaimed: []KindBacklogView{},
	}
	for _, s := range leasehold.AllStates {
		v.Counts[string(s)] = q.Counts[s]
	}
	for _, b := range q.NeverClaimed {
		v.NeverClaimed = append(v.NeverClaimed, KindBacklogView{
			Kind: b.Kind, Due: b.Due, OldestDueSeconds: b.OldestDue.Seconds(), LiveLeases: b.LiveLeases,
			Suspect: Suspect(b, unclaimedAfter),
		})
	}
	return v
}

// Suspect reports whether the never-claimed jobs of b suggest that no
// running worker handles its kind: the oldest has been due longer than
// after, and no job of the kind holds a live lease.
func Suspect(b *leasehold.KindBacklog, after time.Duration) bool {
	return b.Due > 0 && b.OldestDue >= after && b.LiveLeases == 0
}

// NewRescuedView converts a job moved by the watcher.
func NewRescuedView(r *leasehold.RescuedJob) RescuedView {
	return RescuedView{ID: r.ID, Kind: r.Kind, Queue: r.Queue, Attempt: r.Attempt, Owner: r.Owner, Status: string(r.NewState)}
}

// NewStatsView converts a client's counters.
func NewStatsView(owner string, s leasehold.Stats) StatsView {
	return StatsView{
		Owner: owner, Claimed: s.Claimed, Completed: s.Completed, Retried: s.Retried, Failed: s.Failed,
		Snoozed: s.Snoozed, Cancelled: s.Cancelled, Released: s.Released, LeaseLost: s.LeaseLost,
		FinishRefused: s.FinishRefused, OutcomesDropped: s.OutcomesDropped, Rescued: s.Rescued, Panics: s.Panics,
		SkippedLate: s.SkippedLate,
	}
}

func timePtr(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
