package leasetype

import "time"

// EventKind names what happened to a lease.
type EventKind string

// The events a client emits, in the order a job meets them.
const (
	// EventTakenOver: a fetcher's claim took the job over from an expired
	// lease (Job holds the claimed row, TakenOver set), and the same
	// statement ended the expired attempt, Job.Attempt-1, as
	// lease_expired. It comes once per such row, before the row's
	// EventClaimed. The stuck watcher's EventRescued reports the other
	// expired leases: each expired attempt is reported by one of the two.
	EventTakenOver EventKind = "taken_over"
	// EventClaimed: a fetcher leased the job (Job holds the claimed row).
	EventClaimed EventKind = "claimed"
	// EventStarted: the job's handler is about to run. Duration is how
	// long after its claim was sent (the claim's round trip and the wait
	// for a worker goroutine).
	EventStarted EventKind = "started"
	// EventNotStarted: the job was claimed but its handler was not run,
	// because its lease was past its safe window (a late claim reply, a
	// wait for a worker) or already lost; Err says which. Its lease is
	// released.
	EventNotStarted EventKind = "not_started"
	// EventClaimedAgain: a claim returned a lease this client holds
	// already, the same job and attempt: the database lost the commit of
	// the claim that gave it (a standby promoted after an asynchronous
	// failover) and showed the job pending again. Job is the row the
	// client holds. The running handler keeps the job; no handler starts
	// for this claim.
	EventClaimedAgain EventKind = "claimed_again"
	// EventFinished: the outcome of an attempt was written, its fence
	// matched. Outcome is what was written; Duration is how long the
	// handler ran (for a handler Stop cut off, until its lease was
	// released; zero for a lease released unrun); Err is the handler's
	// error, nil on success.
	//
	// A reconciler's resolution of a reconciling job (ResolveReconcile)
	// that committed is reported the same way, with ResolvedBy set: Job
	// is the reconciled job and Outcome what the resolution made of it
	// (completed, retried, snoozed or failed, or cancelled where a retry
	// or snooze met a cancel request; a resolution to stuck
	// leaves it to an operator and is not reported). No attempt ended
	// with it (the expired attempt ended lease_expired, reported by the
	// EventRescued of the watcher that moved it), so Duration is zero
	// and Err nil.
	EventFinished EventKind = "finished"
	// EventFenceRefused: the database refused the fenced write of an
	// outcome because the lease was no longer this client's (a late
	// completion after a takeover): nothing changed. Outcome, Duration and
	// Err are those of the refused write.
	EventFenceRefused EventKind = "fence_refused"
	// EventOutcomeDropped: an outcome was given up unwritten (the database
	// refused it every time, or Stop's budget ran out). The lease expires
	// and the stuck watcher returns the job.
	EventOutcomeDropped EventKind = "outcome_dropped"
	// EventLeaseLost: the handler's context was cancelled because its lease
	// is gone: a heartbeat found it taken over (Err wraps ErrLeaseLost), or
	// it could not be renewed within its safe window and the worker gave it
	// up (Err wraps ErrLeaseNotRenewed).
	EventLeaseLost EventKind = "lease_lost"
	// EventHeartbeat: a heartbeat statement renewed leases; Leases is how
	// many it tried to renew, Duration its round trip. Each lease the
	// database no longer holds for this client gets an EventLeaseLost; a
	// lease left unrenewed because another transaction holds its row (a
	// handler's business transaction) gets none, and is given up by the
	// watchdog only if that lasts past its safe window.
	EventHeartbeat EventKind = "heartbeat"
	// EventHeartbeatFailed: a heartbeat statement failed; Leases is how
	// many leases it tried to renew, Err why. The watchdog gives up the
	// leases that stay unrenewed past their safe window.
	EventHeartbeatFailed EventKind = "heartbeat_failed"
	// EventFinishFailed: a statement writing outcomes failed and will be
	// retried; Leases is how many outcomes it held, Err why.
	EventFinishFailed EventKind = "finish_failed"
	// EventClaimFailed: a claim statement, or the probe that asks which
	// queues have work, failed; Err why. Nothing was leased; the claim is
	// tried again when its queue is next woken, the probe at the next poll
	// interval. A claim abandoned because the client is stopping is not
	// one.
	EventClaimFailed EventKind = "claim_failed"
	// EventRescued: the stuck watcher moved a job whose lease had expired
	// (Rescued says where to).
	EventRescued EventKind = "rescued"
)

// Event is one thing that happened to a lease of a client, as its event
// stream delivers it. Only the fields its Kind documents are set. Job
// points to the row as the client holds it: read it, never change it.
type Event struct {
	Kind EventKind
	// Time is when the client emitted the event, by its own clock. It is
	// set for subscribers only, not for the client's own counters.
	Time time.Time
	// Job is the job, for every kind except EventHeartbeat,
	// EventHeartbeatFailed, EventFinishFailed, EventClaimFailed and
	// EventRescued.
	Job *JobRow
	// Outcome is the attempt's outcome, for EventFinished,
	// EventFenceRefused and EventOutcomeDropped.
	Outcome Outcome
	// State is the state the outcome's write moves the job to, for the
	// same kinds (for EventFenceRefused and EventOutcomeDropped, the state
	// it would have moved it to): the one Outcome implies, except that a
	// reconcile job that gives up is flagged StateStuck for an operator
	// instead of failed or cancelled. An operator's cancel requested while
	// the attempt ran turns a pending or stuck state into cancelled in the
	// database, which State does not see (GetJob does). For a
	// reconciler's resolution it is Job.State.
	State JobState
	// Duration is how long the handler ran, for the same kinds; the time
	// from claim to start for EventStarted; the round trip of an
	// EventHeartbeat.
	Duration time.Duration
	// Err is the handler's error for outcome events, and the failure for
	// EventNotStarted, EventLeaseLost, EventHeartbeatFailed,
	// EventFinishFailed and EventClaimFailed.
	Err error
	// Leases counts the leases of an EventHeartbeat, EventHeartbeatFailed
	// or EventFinishFailed.
	Leases int
	// Rescued is the moved job, for EventRescued.
	Rescued *RescuedJob
	// ResolvedBy is the reconcile job whose resolution an EventFinished
	// reports, nil for any other event. Job is then the reconciled job as
	// its ReconcileArgs name it: ID, Kind, Queue, Attempt (the expired
	// one) and State (the state the resolution moved it to) are set,
	// the other fields are not.
	ResolvedBy *JobRow
}
