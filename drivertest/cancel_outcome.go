package drivertest

import (
	"fmt"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/statemachine"
)

// cancelLease is one lease of a cancel-outcome batch: how its attempt
// ends, and whether an operator asked to cancel its job while it ran.
type cancelLease struct {
	e      statemachine.Ending
	cancel bool
}

// ends returns the endings of outcomes o, each with a cancel request or
// not.
func ends(cancel bool, o ...leasehold.Outcome) []cancelLease {
	out := make([]cancelLease, len(o))
	for i, x := range o {
		out[i] = cancelLease{statemachine.Ending{Outcome: x, Error: "err-" + string(x)}, cancel}
	}
	return out
}

// testCancelRequestedRecordedCancelled: an attempt that a cancel request
// ends (retried, snoozed, released, given up, while the operator's
// request waited for a heartbeat) is recorded as what it came to: the
// job cancelled, its history row ended cancelled, and Finish's result
// names it cancelled, so that the engine reports it so; a completed or
// failed attempt of a job whose cancel was requested stands, and a job
// without a request is left as its transition says, named not
// cancelled. Each shape of finish batch is written: uniform (one owner,
// one transition), mixed (a transition per lease), and split (a group of
// one transition with others beside it, the group cancellable or not).
func testCancelRequestedRecordedCancelled(c *tc) {
	cancellable := []leasehold.Outcome{leasehold.OutcomeRetried, leasehold.OutcomeSnoozed,
		leasehold.OutcomeReleased, leasehold.OutcomeLeaseLost}
	batches := map[string][]cancelLease{
		"mixed": append(ends(true, leasehold.OutcomeRetried, leasehold.OutcomeSnoozed, leasehold.OutcomeReleased,
			leasehold.OutcomeLeaseLost, leasehold.OutcomeCompleted, leasehold.OutcomeFailed),
			ends(false, leasehold.OutcomeCancelled)...),
		"split, cancellable group": append(append(
			ends(true, leasehold.OutcomeRetried, leasehold.OutcomeRetried, leasehold.OutcomeRetried, leasehold.OutcomeRetried),
			ends(false, leasehold.OutcomeRetried)...),
			ends(true, leasehold.OutcomeSnoozed, leasehold.OutcomeReleased, leasehold.OutcomeCompleted, leasehold.OutcomeFailed)...),
		"split, completed group": append(append(
			ends(true, leasehold.OutcomeCompleted, leasehold.OutcomeCompleted, leasehold.OutcomeCompleted, leasehold.OutcomeCompleted),
			ends(true, leasehold.OutcomeRetried, leasehold.OutcomeSnoozed)...),
			ends(false, leasehold.OutcomeReleased)...),
	}
	for _, o := range append(cancellable, leasehold.OutcomeCompleted, leasehold.OutcomeFailed) {
		batches["uniform "+string(o)] = append(ends(true, o, o), ends(false, o)...)
	}
	// A flagged failure is stuck, which the rule cancels too.
	batches["uniform flagged failure"] = []cancelLease{
		{statemachine.Ending{Outcome: leasehold.OutcomeFailed, Error: "boom", Flag: true}, true},
		{statemachine.Ending{Outcome: leasehold.OutcomeFailed, Error: "boom", Flag: true}, false},
	}
	for name, batch := range batches {
		c.checkCancelBatch(name, batch)
	}
}

// checkCancelBatch writes batch in one Finish, each lease claimed (and
// its job's cancel requested where it says) first, and checks what each
// job became, its history row and Finish's result.
func (c *tc) checkCancelBatch(name string, batch []cancelLease) {
	c.Helper()
	rows := c.insertN(len(batch), "q", "k")
	ps := make([]*driver.FinishParams, len(batch))
	for i, l := range batch {
		j := c.claimID(c.d, rows[i].ID, "w", liveTTL, false)
		if l.cancel {
			if _, err := c.d.CancelJob(c.ctx, j.ID); err != nil {
				c.Fatalf("%s: CancelJob(processing): %v", name, err)
			}
		}
		ps[i] = token(j.ID, "w", j.Attempt, l.e)
	}
	got := map[int64]bool{}
	for _, r := range c.finishResults(ps...) {
		if _, dup := got[r.ID]; dup {
			c.Errorf("%s: Finish named job %d twice", name, r.ID)
		}
		got[r.ID] = r.Cancelled
	}
	for i, l := range batch {
		id := rows[i].ID
		tr := ps[i].Transition
		what := fmt.Sprintf("%s: job %d ended %s (flag %v), cancel requested %v", name, id, l.e.Outcome, l.e.Flag, l.cancel)
		cancelled := l.cancel && tr.Cancellable()
		state, outcome := tr.State, l.e.Outcome
		if cancelled {
			state, outcome = leasehold.StateCancelled, leasehold.OutcomeCancelled
		}
		if r, ok := got[id]; !ok || r != cancelled {
			c.Errorf("%s: Finish result named %v, cancelled %v; want named, cancelled %v", what, ok, r, cancelled)
		}
		j := c.get(id)
		c.eq(what+": state", j.State, state)
		c.eq(what+": finished", !j.FinishedAt.IsZero(), state.Finished())
		if h := c.attempts(id); len(h) != 1 || h[0].Outcome != outcome || h[0].Error != l.e.Error {
			c.Errorf("%s: history %s, want one attempt ended %s (%q)", what, fmtHistory(h), outcome, l.e.Error)
		}
	}
}

// testRescueCancelRequestedReported: RescueExpired reports the state it
// wrote. The state machine's watcher reads the cancel request itself (a
// rescued job whose cancel was requested is cancelled, its attempt
// lease_expired), but a Decide whose transition is to pending or stuck
// for such a job meets the drivers' cancel rule: the job is cancelled,
// and RescuedJob.NewState says so; its history row records the
// transition's CancelledOutcome, or its Outcome when it has none.
func testRescueCancelRequestedReported(c *tc) {
	rows := c.insertN(3, "q", "k")
	var held []*leasehold.JobRow
	for i, r := range rows {
		j := c.claimID(c.d, r.ID, "owner-x", shortTTL, false)
		if i < 2 {
			if _, err := c.d.CancelJob(c.ctx, j.ID); err != nil {
				c.Fatalf("CancelJob(processing): %v", err)
			}
		}
		held = append(held, j)
	}
	c.waitExpired(held...)
	// Decide as if no cancel were requested; the first job's transition
	// names the outcome to record if it is cancelled.
	decide := func(j *leasehold.JobRow) driver.Transition {
		blind := *j
		blind.CancelRequested = false
		t := statemachine.Rescue(&blind, false)
		if j.ID == rows[0].ID {
			t.CancelledOutcome = leasehold.OutcomeCancelled
		}
		return t
	}
	res, err := c.d.RescueExpired(c.ctx, &driver.RescueParams{Decide: decide, Limit: 100})
	if err != nil {
		c.Fatalf("RescueExpired: %v", err)
	}
	got := map[int64]leasehold.JobState{}
	for _, r := range res {
		got[r.ID] = r.NewState
	}
	want := []struct {
		state   leasehold.JobState
		outcome leasehold.Outcome
	}{
		{leasehold.StateCancelled, leasehold.OutcomeCancelled},
		{leasehold.StateCancelled, leasehold.OutcomeLeaseExpired},
		{leasehold.StatePending, leasehold.OutcomeLeaseExpired},
	}
	for i, w := range want {
		id := rows[i].ID
		what := fmt.Sprintf("job %d rescued to pending, cancel requested %v", id, i < 2)
		c.eq(what+": RescuedJob.NewState", got[id], w.state)
		c.eq(what+": state", c.get(id).State, w.state)
		if h := c.attempts(id); len(h) != 1 || h[0].Outcome != w.outcome {
			c.Errorf("%s: history %s, want one attempt ended %s", what, fmtHistory(h), w.outcome)
		}
	}
}
