package leasetype

import (
	"encoding/json"
	"strconv"
	"time"
)

// JobState is the state of a job in its state machine (see the package
// documentation).
type JobState string

// The job states.
const (
	// StatePending jobs wait to be claimed once run_at has passed.
	StatePending JobState = "pending"
	// StateProcessing jobs are held under a lease by one worker.
	StateProcessing JobState = "processing"
	// StateCompleted jobs finished successfully. Terminal.
	StateCompleted JobState = "completed"
	// StateFailed jobs failed permanently or exhausted their attempts.
	// Terminal.
	StateFailed JobState = "failed"
	// StateCancelled jobs were cancelled by an operator or a handler.
	// Terminal.
	StateCancelled JobState = "cancelled"
	// StateStuck jobs lost their lease in a queue whose policy flags rather
	// than requeues; they wait for an operator (retry or cancel).
	StateStuck JobState = "stuck"
	// StateReconciling jobs lost their lease in a queue whose policy
	// reconciles rather than requeues: a reconcile job, inserted with the
	// move, finds out what the expired attempt did and resolves the job
	// (completed, pending again, or stuck). No worker claims them.
	StateReconciling JobState = "reconciling"
)

// AllStates lists every job state, in state-machine order.
var AllStates = []JobState{StatePending, StateProcessing, StateCompleted, StateFailed, StateCancelled, StateStuck,
	StateReconciling}

// Valid reports whether s is one of the known states.
func (s JobState) Valid() bool {
	for _, v := range AllStates {
		if s == v {
			return true
		}
	}
	return false
}

// Finished reports whether s is terminal.
func (s JobState) Finished() bool {
	return s == StateCompleted || s == StateFailed || s == StateCancelled
}

// JobRow is a job as stored in the database.
type JobRow struct {
	ID       int64
	Kind     string
	Queue    string
	State    JobState
	Priority int
	// Attempt counts the claims of this job. It is incremented and
	// persisted by every claim and never decreases: with ID it forms the
	// fencing token of a lease.
	Attempt int
	// MaxAttempts is the retry budget: the job fails once
	// Attempt-FreeAttempts reaches it.
	MaxAttempts int
	// FreeAttempts counts attempts not charged to the retry budget:
	// snoozes, shutdown releases, and attempts before an operator retry.
	FreeAttempts int
	Args         json.RawMessage
	Metadata     json.RawMessage
	UniqueKey    string
	// UUID is a random value (RFC 4122 version 4) assigned when the job is
	// inserted: the same for every attempt of the job, and unique across
	// jobs even when a database reissues ids (as a new primary can after
	// an asynchronous failover). Empty for a job inserted before schema
	// version 2 (see IdempotencyKey).
	UUID string
	// RunAt is when the job becomes claimable (database clock).
	RunAt     time.Time
	CreatedAt time.Time
	// LeaseOwner is the worker instance holding the lease, empty when none.
	LeaseOwner string
	// LeaseUntil is when the lease expires (database clock), zero when none.
	LeaseUntil time.Time
	// HeartbeatAt is the last renewal of the current lease, zero when none.
	HeartbeatAt time.Time
	// FinishedAt is when the job reached a terminal state, zero otherwise.
	FinishedAt time.Time
	// LastError is the error text of the latest failed attempt.
	LastError string
	// CancelRequested is set when an operator cancelled a processing job;
	// its handler is cancelled at the next heartbeat.
	CancelRequested bool
	// TakenOver is set on a row returned by a claim (Claim or ClaimByID)
	// that took the job over from an expired lease: the same statement
	// ended that lease's attempt, Attempt-1, as lease_expired in the
	// history. Its handler may find that attempt's work done partway. It
	// is false on any other row: a claimed pending job, and every row read
	// any other way.
	TakenOver bool
}

// ChargedAttempts is the number of attempts charged to the retry budget.
func (j *JobRow) ChargedAttempts() int { return j.Attempt - j.FreeAttempts }

// Outcome is how an attempt ended.
type Outcome string

// The attempt outcomes recorded in the history.
const (
	OutcomeRunning      Outcome = ""              // not ended yet
	OutcomeCompleted    Outcome = "completed"     // handler succeeded
	OutcomeRetried      Outcome = "retried"       // failed, will run again after backoff
	OutcomeFailed       Outcome = "failed"        // failed permanently or budget exhausted
	OutcomeSnoozed      Outcome = "snoozed"       // handler asked to run later, budget not charged
	OutcomeReleased     Outcome = "released"      // lease given back at shutdown
	OutcomeLeaseExpired Outcome = "lease_expired" // lease ran out; watcher or a new claim took over
	OutcomeLeaseLost    Outcome = "lease_lost"    // worker gave up a lease it could no longer renew
	OutcomeCancelled    Outcome = "cancelled"     // cancelled by an operator or the handler
)

// Attempt is one row of a job's attempt history: one row per claim.
type Attempt struct {
	JobID       int64
	Attempt     int
	Owner       string
	ClaimedAt   time.Time
	HeartbeatAt time.Time // last renewal, zero if never renewed
	EndedAt     time.Time // zero while running
	Outcome     Outcome
	Error       string
	// Resolution, on an attempt whose lease expired in a queue that
	// reconciles, is what the reconciler decided (for example "completed
	// by reconcile job 42: provider charged"); empty otherwise or while
	// the job is reconciling.
	Resolution string
}

// IdempotencyKey returns a key to pass to outside systems that cannot be
// fenced, such as a payment provider: "leasehold-" followed by the job's
// UUID. Every attempt of the job sends the same key, so a retried charge is
// the same charge, and no other job ever sends it, even one that was given
// the same id after a failover lost the first.
//
// A job inserted before schema version 2 has no UUID and keeps the key it
// had then, "leasehold-job-" and its id, so that an attempt run after the
// upgrade repeats the charge an earlier attempt may have made instead of
// making a second one.
func (j *JobRow) IdempotencyKey() string {
	if j.UUID == "" {
		return "leasehold-job-" + strconv.FormatInt(j.ID, 10)
	}
	return "leasehold-" + j.UUID
}
