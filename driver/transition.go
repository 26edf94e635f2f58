package driver

import (
	"fmt"
	"time"

	"github.com/leasehold/leasehold/leasetype"
)

// Transition is the complete description of one job's move out of
// processing: what Finish writes for an outcome and what RescueExpired
// writes for an expired lease. The engine computes it (package
// internal/statemachine is the state machine, written once); a driver
// applies it column by column, without interpreting it, and never derives
// anything from outcome names. Every time it sets is the database clock's
// now at the write ("now" below).
//
// Applying a transition to a job writes exactly:
//
//	status        = State, but cancelled when State is pending or stuck
//	                and the job's cancel_requested is set
//	run_at        = run_at (unchanged) when KeepRunAt, else now + Delay
//	free_attempts = free_attempts + 1 when FreeAttempt, else unchanged
//	last_error    = last_error (unchanged) when KeepLastError,
//	                else LastError (NULL when empty)
//	finished_at   = now when Finished or the job was so cancelled, else NULL
//	lease_owner   = NULL, lease_until = NULL
//
// and writes the history row of the attempt it ends: owner, claimed_at
// and heartbeat_at from the job row, ended_at = now, outcome = Outcome
// (CancelledOutcome, when set, for a job so cancelled), error =
// AttemptError (NULL when empty); an open row left by a claim from
// before migration 008 is ended with the same values instead. attempt,
// heartbeat_at and cancel_requested are not changed. Drivers refuse a
// transition that Validate refuses.
//
// The one rule that reads the row, cancel_requested, is the drivers':
// an operator may ask to cancel a job while it runs (CancelJob), and the
// engine learns of it only at the next heartbeat. An attempt that ends
// before then, retried, snoozed, released or given up, must not put the
// job back in line: it is cancelled instead, and its history row records
// CancelledOutcome (the engine's state machine sets it to cancelled), so
// that the history, the events and the counters say what became of the
// attempt; with no CancelledOutcome the row keeps Outcome. Finish reports
// each lease so cancelled (FinishResult.Cancelled). A reconciler's
// resolution (Driver.Resolve) applies the rule to pending alone: a
// resolution to stuck stays stuck, for an operator to decide what the
// reconciler could not.
//
// A transition to reconciling carries Spawn, the reconcile job: the
// driver inserts it in the same transaction as the move, for each job
// whose fence matched, so that a job is never reconciling without its
// reconcile job. Only RescueExpired applies such transitions.
type Transition struct {
	// State is the job's new state: pending, completed, failed, cancelled,
	// stuck or reconciling; never processing.
	State leasetype.JobState
	// KeepRunAt leaves run_at unchanged, so that a pending job keeps its
	// place in line ahead of newer work. When false, run_at becomes the
	// database clock's now plus Delay.
	KeepRunAt bool
	// Delay is added to now to make the new run_at when KeepRunAt is
	// false; it must be zero when KeepRunAt is true.
	Delay time.Duration
	// FreeAttempt frees the attempt (free_attempts + 1): it is not charged
	// to the retry budget (see JobRow.ChargedAttempts). When false the
	// attempt is charged.
	FreeAttempt bool
	// KeepLastError leaves last_error unchanged. When false, last_error
	// becomes LastError (NULL when LastError is empty).
	KeepLastError bool
	// LastError is the job's new last_error when KeepLastError is false;
	// it must be empty when KeepLastError is true.
	LastError string
	// Finished sets finished_at to now; when false finished_at becomes
	// NULL. It must equal State.Finished(): a job has a finish time
	// exactly when its state is terminal.
	Finished bool
	// Outcome is recorded on the attempt's history row: one of the ended
	// outcomes (completed, retried, failed, snoozed, released,
	// lease_expired, lease_lost, cancelled).
	Outcome leasetype.Outcome
	// CancelledOutcome, when not empty, is recorded on the attempt's
	// history row in place of Outcome when the job is cancelled where
	// State would make it pending or stuck (its cancel was requested
	// while it ran); it may be set only for those two states. See
	// OutcomeWhenCancelled.
	CancelledOutcome leasetype.Outcome
	// AttemptError is the error text recorded on the attempt's history row
	// (NULL when empty).
	AttemptError string
	// Spawn is the job to insert with the move, in the same transaction:
	// set exactly when State is reconciling (the reconcile job), nil
	// otherwise. A Spawn whose UniqueKey exists already is not inserted
	// (the existing job stands for it).
	Spawn *InsertParams
}

// endedOutcomes are the outcomes an attempt row can end with.
var endedOutcomes = []leasetype.Outcome{
	leasetype.OutcomeCompleted, leasetype.OutcomeRetried, leasetype.OutcomeFailed,
	leasetype.OutcomeSnoozed, leasetype.OutcomeReleased, leasetype.OutcomeLeaseExpired,
	leasetype.OutcomeLeaseLost, leasetype.OutcomeCancelled,
}

// Validate returns an error unless t is a transition a driver may apply:
// a known state other than processing, Finished agreeing with it, Spawn
// set exactly for reconciling, an ended outcome, a CancelledOutcome that
// is empty or an ended outcome of a transition to pending or stuck, no
// Delay with KeepRunAt and no LastError with KeepLastError.
// Every such transition has one meaning, so that two equal transitions
// are two identical writes.
func (t Transition) Validate() error {
	if !t.State.Valid() || t.State == leasetype.StateProcessing {
		return fmt.Errorf("transition to state %q: want pending, completed, failed, cancelled, stuck or reconciling", t.State)
	}
	if (t.State == leasetype.StateReconciling) != (t.Spawn != nil) {
		return fmt.Errorf("transition to state %s with Spawn %v: a job is reconciling exactly when its reconcile job is inserted with the move",
			t.State, t.Spawn != nil)
	}
	if t.Finished != t.State.Finished() {
		return fmt.Errorf("transition to state %s with Finished %v: a job is finished exactly when its state is terminal", t.State, t.Finished)
	}
	if !ended(t.Outcome) {
		return fmt.Errorf("transition with attempt outcome %q: not an ended outcome", t.Outcome)
	}
	if t.CancelledOutcome != "" && !ended(t.CancelledOutcome) {
		return fmt.Errorf("transition with cancelled outcome %q: not an ended outcome", t.CancelledOutcome)
	}
	if t.CancelledOutcome != "" && !t.Cancellable() {
		return fmt.Errorf("transition to state %s with cancelled outcome %q: only a transition to pending or stuck is cancelled by a cancel request",
			t.State, t.CancelledOutcome)
	}
	if t.KeepRunAt && t.Delay != 0 {
		return fmt.Errorf("transition keeping run_at with a delay of %v", t.Delay)
	}
	if t.KeepLastError && t.LastError != "" {
		return fmt.Errorf("transition keeping last_error with a new last_error %q", t.LastError)
	}
	return nil
}

// Cancellable reports whether a cancel request turns t into cancelled:
// whether its State is pending or stuck.
func (t Transition) Cancellable() bool {
	return t.State == leasetype.StatePending || t.State == leasetype.StateStuck
}

// OutcomeWhenCancelled is the outcome the history row of an attempt that
// t ends records when a cancel request turns t into cancelled:
// CancelledOutcome, or Outcome when that is empty.
func (t Transition) OutcomeWhenCancelled() leasetype.Outcome {
	if t.CancelledOutcome != "" {
		return t.CancelledOutcome
	}
	return t.Outcome
}

// ended reports whether o is an outcome an attempt row can end with.
func ended(o leasetype.Outcome) bool {
	for _, e := range endedOutcomes {
		if o == e {
			return true
		}
	}
	return false
}
