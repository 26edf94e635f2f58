package leasehold

import (
	"github.com/google/uuid"

	"github.com/leasehold/leasehold/leasetype"
)

// JobState is the state of a job in its state machine (see the package
// documentation).
type JobState = leasetype.JobState

// The job states.
const (
	// StatePending jobs wait to be claimed once run_at has passed.
	StatePending = leasetype.StatePending
	// StateProcessing jobs are held under a lease by one worker.
	StateProcessing = leasetype.StateProcessing
	// StateCompleted jobs finished successfully. Terminal.
	StateCompleted = leasetype.StateCompleted
	// StateFailed jobs failed permanently or exhausted their attempts.
	// Terminal.
	StateFailed = leasetype.StateFailed
	// StateCancelled jobs were cancelled by an operator or a handler.
	// Terminal.
	StateCancelled = leasetype.StateCancelled
	// StateStuck jobs lost their lease in a queue whose policy flags rather
	// than requeues; they wait for an operator (retry or cancel).
	StateStuck = leasetype.StateStuck
	// StateReconciling jobs lost their lease in a queue configured with
	// QueueConfig.Reconcile: a reconcile job, inserted with the move,
	// decides what becomes of them (ResolveReconcile). No worker claims
	// them.
	StateReconciling = leasetype.StateReconciling
)

// AllStates lists every job state, in state-machine order.
var AllStates = leasetype.AllStates

// JobRow is a job as stored in the database: its state, its lease and
// its fencing token (ID, Attempt), its retry budget and its UUID (see
// leasetype.JobRow for the fields, and IdempotencyKey).
type JobRow = leasetype.JobRow

// Outcome is how an attempt ended.
type Outcome = leasetype.Outcome

// The attempt outcomes recorded in the history.
const (
	OutcomeRunning      = leasetype.OutcomeRunning      // not ended yet
	OutcomeCompleted    = leasetype.OutcomeCompleted    // handler succeeded
	OutcomeRetried      = leasetype.OutcomeRetried      // failed, will run again after backoff
	OutcomeFailed       = leasetype.OutcomeFailed       // failed permanently or budget exhausted
	OutcomeSnoozed      = leasetype.OutcomeSnoozed      // handler asked to run later, budget not charged
	OutcomeReleased     = leasetype.OutcomeReleased     // lease given back at shutdown
	OutcomeLeaseExpired = leasetype.OutcomeLeaseExpired // lease ran out; watcher or a new claim took over
	OutcomeLeaseLost    = leasetype.OutcomeLeaseLost    // worker gave up a lease it could no longer renew
	OutcomeCancelled    = leasetype.OutcomeCancelled    // cancelled by an operator or the handler
)

// Attempt is one row of a job's attempt history: one row per claim.
type Attempt = leasetype.Attempt

// InsertResult is the outcome of inserting one job: the job, and whether
// it was a duplicate of an existing one with the same unique key.
type InsertResult = leasetype.InsertResult

// ListParams filters ListJobs. Zero values match everything.
type ListParams = leasetype.ListParams

// QueueStats summarises one queue: counts by state, the oldest due job,
// live and expired leases, and never-claimed work per kind.
type QueueStats = leasetype.QueueStats

// KindBacklog is the never-claimed due work of one kind in one queue.
type KindBacklog = leasetype.KindBacklog

// ThroughputBucket is the jobs of one queue that finished an attempt with
// one outcome during one minute, from Client.Throughput.
type ThroughputBucket = leasetype.ThroughputBucket

// ThroughputCount is a number of jobs of one queue and outcome.
type ThroughputCount = leasetype.ThroughputCount

// CheckpointRow is one durable checkpoint a handler recorded under its
// lease (see Checkpoint).
type CheckpointRow = leasetype.CheckpointRow

// RescuedJob is one job the stuck watcher moved.
type RescuedJob = leasetype.RescuedJob

// newJobUUID returns a new random (version 4) UUID for JobRow.UUID.
func newJobUUID() string { return uuid.NewString() }
