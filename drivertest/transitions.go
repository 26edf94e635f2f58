package drivertest

import (
	"fmt"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/statemachine"
)

// stateMachineTransitions returns every transition the state machine
// produces: each outcome the engine writes, with a delay and error text
// and with neither, and the rescue of an expired lease to each state.
func stateMachineTransitions() []driver.Transition {
	var ts []driver.Transition
	for _, o := range statemachine.Outcomes {
		ts = append(ts,
			statemachine.Finish(statemachine.Ending{Outcome: o, Delay: time.Hour, Error: "new-err"}),
			statemachine.Finish(statemachine.Ending{Outcome: o}))
	}
	expired := func(max int, cancel bool) *leasehold.JobRow {
		return &leasehold.JobRow{State: leasehold.StateProcessing, Attempt: 2, MaxAttempts: max,
			CancelRequested: cancel, LeaseOwner: "w"}
	}
	return append(ts,
		statemachine.Rescue(expired(3, false), false), // pending
		statemachine.Rescue(expired(3, false), true),  // stuck
		statemachine.Rescue(expired(2, false), false), // failed
		statemachine.Rescue(expired(3, true), false),  // cancelled
	)
}

// groupedLeases is how many leases of each transition the batch of groups
// in testFinishAppliesTransitions holds: enough for the SQLite driver to
// write each transition's leases as a uniform batch (at least its
// minGroup).
const groupedLeases = 8

// testFinishAppliesTransitions applies every transition the state
// machine produces to a job that was retried once (last_error "old"),
// claimed again and heartbeated, each alone (the driver's path for a
// uniform batch), all in one mixed batch, and in one batch of groups
// (each transition for groupedLeases leases, interleaved, and a retry
// with an error of its own among them), and checks every column of each
// job and its history against the transition's definition
// (driver.Transition): both drivers write exactly the same rows.
func testFinishAppliesTransitions(c *tc) {
	ts := stateMachineTransitions()
	alone, batch := c.heldTwice(len(ts)), c.heldTwice(len(ts))
	for i, t := range ts {
		c.applyTransitions(fmt.Sprintf("alone: %+v", t), alone[i:i+1], ts[i:i+1])
	}
	c.applyTransitions("mixed batch", batch, ts)

	var grouped []driver.Transition
	for i := range groupedLeases {
		grouped = append(grouped, ts...)
		if i == groupedLeases/2 {
			grouped = append(grouped, statemachine.Finish(statemachine.Ending{
				Outcome: leasehold.OutcomeRetried, Delay: time.Minute, Error: "declined once"}))
		}
	}
	c.applyTransitions("batch of groups", c.heldTwice(len(grouped)), grouped)
}

// heldTwice returns n jobs, each retried once with error "old" (attempt 1)
// and held again by owner "w" (attempt 2) with a heartbeat.
func (c *tc) heldTwice(n int) []*leasehold.JobRow {
	c.Helper()
	rows := c.insertN(n, "q", "k")
	var first []*driver.FinishParams
	for _, r := range rows {
		j := c.claimID(c.d, r.ID, "w", liveTTL, false)
		first = append(first, token(j.ID, "w", 1, statemachine.Ending{Outcome: leasehold.OutcomeRetried, Error: "old"}))
	}
	c.eqIDs("Finish retried", c.finish(first...), ids(rows))
	var leases []driver.LeaseRef
	for _, r := range rows {
		c.waitFor("the retried job to be due", func() bool { return !c.get(r.ID).RunAt.After(c.now()) })
		leases = append(leases, ref(c.claimID(c.d, r.ID, "w", liveTTL, false)))
	}
	if hb := c.heartbeat("w", liveTTL, leases...); len(hb) != n {
		c.Fatalf("Heartbeat renewed %d of %d leases", len(hb), n)
	}
	held := make([]*leasehold.JobRow, n)
	for i, r := range rows {
		held[i] = c.get(r.ID)
	}
	return held
}

// applyTransitions applies ts[i] to the lease of held[i], in one Finish,
// and checks each job and its history.
func (c *tc) applyTransitions(what string, held []*leasehold.JobRow, ts []driver.Transition) {
	c.Helper()
	ps := make([]*driver.FinishParams, len(held))
	before := make([][]*leasehold.Attempt, len(held))
	for i, h := range held {
		ps[i] = &driver.FinishParams{ID: h.ID, Owner: h.LeaseOwner, Attempt: h.Attempt, Transition: ts[i]}
		before[i] = c.attempts(h.ID)
	}
	from := c.now()
	c.eqIDs(what+": Finish", c.finish(ps...), ids(held))
	to := c.now()
	for i, h := range held {
		c.checkApplied(fmt.Sprintf("%s: job %d", what, h.ID), h, before[i], ts[i], from, to)
	}
}

// checkApplied checks job held (and its history, before) after t was
// applied between from and to, column by column.
func (c *tc) checkApplied(what string, held *leasehold.JobRow, before []*leasehold.Attempt, t driver.Transition, from, to time.Time) {
	c.Helper()
	got := c.get(held.ID)
	want := *held
	want.State = t.State
	if t.FreeAttempt {
		want.FreeAttempts++
	}
	if !t.KeepLastError {
		want.LastError = t.LastError
	}
	want.LeaseOwner, want.LeaseUntil = "", time.Time{}
	if !t.KeepRunAt {
		c.timeIn(what+" RunAt (now + Delay)", got.RunAt, from.Add(t.Delay), to.Add(t.Delay))
		want.RunAt = got.RunAt
	}
	want.FinishedAt = time.Time{}
	if t.Finished {
		c.timeIn(what+" FinishedAt", got.FinishedAt, from, to)
		want.FinishedAt = got.FinishedAt
	}
	c.sameJob(what, got, &want)

	as := c.attempts(held.ID)
	if len(as) != len(before) || len(as) == 0 {
		c.Errorf("%s: %d attempt rows, want %d", what, len(as), len(before))
		return
	}
	last := *before[len(before)-1]
	c.timeIn(what+" attempt EndedAt", as[len(as)-1].EndedAt, from, to)
	last.EndedAt = as[len(as)-1].EndedAt
	last.Outcome, last.Error, last.HeartbeatAt = t.Outcome, t.AttemptError, held.HeartbeatAt
	wantAs := append(before[:len(before)-1:len(before)-1], &last)
	for _, d := range diffAttempts(as, wantAs) {
		c.Errorf("%s: %s", what, d)
	}
}
