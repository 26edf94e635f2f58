// Package statemachine is leasehold's job state machine, written once, in
// Go: it computes every move of a job out of processing, for each outcome
// the engine writes (Finish) and for an expired lease (Rescue), as a
// driver.Transition that the drivers apply without interpreting it. No
// driver's SQL decodes outcome names; the conformance suite checks that
// both drivers apply every transition this package produces identically.
//
//	outcome     state      run_at       attempt  last_error             finished
//	completed   completed  kept         charged  kept                   yes
//	retried     pending    now + delay  charged  the error              no
//	failed      failed     kept         charged  the error              yes
//	snoozed     pending    now + delay  free     kept                   no
//	released    pending    kept         free     kept                   no
//	lease_lost  pending    kept         charged  the error              no
//	cancelled   cancelled  kept         charged  the error, if any      yes
//
// A job keeps its run_at, and so its place in line ahead of newer work,
// unless it is delayed on purpose (retried, snoozed). An ending with Flag
// set makes stuck (not finished) what would be failed or cancelled. The attempt row
// records the outcome and the error text as given, but for a job whose
// cancel an operator requested while it ran: a transition to pending or
// stuck cancels it instead (the drivers' one rule, see driver.Transition),
// and its attempt row then records cancelled (CancelledOutcome).
package statemachine

import (
	"time"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/leasetype"
)

// Ending is how one attempt ended, as the engine decided it: the outcome,
// the delay before the job may run again (retried and snoozed; ignored
// otherwise) and the error text (none for completed, snoozed and
// released). Flag makes a job that the outcome would fail or cancel stuck
// instead, the outcome recorded as given: a reconcile job that gives up
// hands its reconciling job to an operator (see Reconciler).
type Ending struct {
	Outcome leasetype.Outcome
	Delay   time.Duration
	Error   string
	Flag    bool
}

// lastError says what an outcome does with the job's last_error.
type lastError int

const (
	keepError   lastError = iota // leave it
	setError                     // the attempt's error text (NULL when none)
	setAnyError                  // the attempt's error text when there is one, else leave it
)

// rule is one row of the state machine's table.
type rule struct {
	state   leasetype.JobState
	delayed bool // run_at = now + Delay; else kept
	free    bool // the attempt is not charged to the retry budget
	lastErr lastError
}

// rules is the table of the package documentation.
var rules = map[leasetype.Outcome]rule{
	leasetype.OutcomeCompleted: {leasetype.StateCompleted, false, false, keepError},
	leasetype.OutcomeRetried:   {leasetype.StatePending, true, false, setError},
	leasetype.OutcomeFailed:    {leasetype.StateFailed, false, false, setError},
	leasetype.OutcomeSnoozed:   {leasetype.StatePending, true, true, keepError},
	leasetype.OutcomeReleased:  {leasetype.StatePending, false, true, keepError},
	leasetype.OutcomeLeaseLost: {leasetype.StatePending, false, false, setError},
	leasetype.OutcomeCancelled: {leasetype.StateCancelled, false, false, setAnyError},
}

// Outcomes lists the outcomes Finish knows: every outcome the engine
// writes for a lease it holds.
var Outcomes = []leasetype.Outcome{
	leasetype.OutcomeCompleted, leasetype.OutcomeRetried, leasetype.OutcomeFailed,
	leasetype.OutcomeSnoozed, leasetype.OutcomeReleased, leasetype.OutcomeLeaseLost,
	leasetype.OutcomeCancelled,
}

// Finish returns the transition of a job whose attempt ended as e. For an
// outcome it does not know (see Outcomes) it returns a transition with no
// state, which Transition.Validate, and so every driver, refuses.
func Finish(e Ending) driver.Transition {
	r, ok := rules[e.Outcome]
	if !ok {
		return driver.Transition{Outcome: e.Outcome, AttemptError: e.Error}
	}
	t := driver.Transition{
		State:        r.state,
		KeepRunAt:    !r.delayed,
		FreeAttempt:  r.free,
		Finished:     r.state.Finished(),
		Outcome:      e.Outcome,
		AttemptError: e.Error,
	}
	if r.delayed {
		t.Delay = e.Delay
	}
	if e.Flag && (r.state == leasetype.StateFailed || r.state == leasetype.StateCancelled) {
		t.State, t.Finished = leasetype.StateStuck, false
	}
	if t.Cancellable() {
		t.CancelledOutcome = leasetype.OutcomeCancelled
	}
	switch {
	case r.lastErr == setError, r.lastErr == setAnyError && e.Error != "":
		t.LastError = e.Error
	default:
		t.KeepLastError = true
	}
	return t
}
