package view

import "github.com/leasehold/leasehold"

// StatsView is a worker's counters: every field of leasehold.Stats but
// Running, a gauge of the handlers running at the moment rather than a
// count since the client started. `leasehold work --json` prints it when
// the worker stops.
type StatsView struct {
	Owner     string `json:"owner"`
	Claimed   int64  `json:"claimed"`
	Completed int64  `json:"completed"`
	Retried   int64  `json:"retried"`
	Failed    int64  `json:"failed"`
	Snoozed   int64  `json:"snoozed"`
	Cancelled int64  `json:"cancelled"`
	// Flagged counts reconcile jobs that gave up and were flagged stuck
	// for an operator.
	Flagged  int64 `json:"flagged"`
	Released int64 `json:"released"`
	// LeaseLost counts handlers cancelled because their lease was gone or
	// could not be renewed in time.
	LeaseLost int64 `json:"lease_lost"`
	// FinishRefused counts fenced writes the database refused: the lease
	// had been taken over.
	FinishRefused int64 `json:"finish_refused"`
	// HeartbeatErrors, FinishErrors and ClaimErrors count the heartbeat,
	// finish (retried) and claim statements that failed.
	HeartbeatErrors int64 `json:"heartbeat_errors"`
	FinishErrors    int64 `json:"finish_errors"`
	ClaimErrors     int64 `json:"claim_errors"`
	// OutcomesDropped counts outcomes given up unwritten.
	OutcomesDropped int64 `json:"outcomes_dropped"`
	// Rescued counts expired leases the worker's watcher moved, and
	// TakenOver expired leases its claims took over. Summed over every
	// worker, the two count the attempts whose lease expired.
	Rescued   int64 `json:"rescued"`
	TakenOver int64 `json:"taken_over"`
	Panics    int64 `json:"panics"`
	// SkippedLate counts claimed jobs not started because the claim's
	// reply came too late for a safe run.
	SkippedLate int64 `json:"skipped_late"`
	// ClaimedAgain counts claims that returned a lease the worker held
	// already (a database that lost the claim that gave it): the running
	// handler kept the job.
	ClaimedAgain int64 `json:"claimed_again"`
	// EventsDropped counts events the client's subscribers missed because
	// their channel was full.
	EventsDropped int64 `json:"events_dropped"`
}

// NewStatsView returns the view of the counters s of the worker owner.
func NewStatsView(owner string, s leasehold.Stats) StatsView {
	return StatsView{
		Owner: owner, Claimed: s.Claimed, Completed: s.Completed, Retried: s.Retried, Failed: s.Failed,
		Snoozed: s.Snoozed, Cancelled: s.Cancelled, Flagged: s.Flagged, Released: s.Released, LeaseLost: s.LeaseLost,
		FinishRefused: s.FinishRefused, HeartbeatErrors: s.HeartbeatErrors, FinishErrors: s.FinishErrors,
		ClaimErrors: s.ClaimErrors, OutcomesDropped: s.OutcomesDropped, Rescued: s.Rescued, TakenOver: s.TakenOver,
		Panics: s.Panics, SkippedLate: s.SkippedLate, EventsDropped: s.EventsDropped, ClaimedAgain: s.ClaimedAgain,
	}
}

// RescuedView is a job the stuck watcher moved, and the state it moved
// it to.
type RescuedView struct {
	ID      int64  `json:"id"`
	Kind    string `json:"kind"`
	Queue   string `json:"queue"`
	Attempt int    `json:"attempt"`
	Owner   string `json:"owner"`
	Status  string `json:"status"`
}

// NewRescuedView returns the view of a job moved by the watcher.
func NewRescuedView(r *leasehold.RescuedJob) RescuedView {
	return RescuedView{ID: r.ID, Kind: r.Kind, Queue: r.Queue, Attempt: r.Attempt, Owner: r.Owner, Status: string(r.NewState)}
}
