package drivertest

import (
	"fmt"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/statemachine"
)

// finishCase is one outcome and the job state it must produce.
type finishCase struct {
	outcome  leasehold.Outcome
	delay    time.Duration
	err      string
	state    leasehold.JobState
	runAfter time.Duration // run_at = now + runAfter; -1 when not checked
	free     int           // FreeAttempts after
	lastErr  string        // LastError after
	terminal bool          // FinishedAt set
}

func finishCases() []finishCase {
	return []finishCase{
		{leasehold.OutcomeCompleted, 0, "", leasehold.StateCompleted, -1, 0, "", true},
		{leasehold.OutcomeRetried, time.Hour, "r-err", leasehold.StatePending, time.Hour, 0, "r-err", false},
		{leasehold.OutcomeFailed, 0, "f-err", leasehold.StateFailed, -1, 0, "f-err", true},
		{leasehold.OutcomeSnoozed, time.Hour, "", leasehold.StatePending, time.Hour, 1, "", false},
		{leasehold.OutcomeReleased, time.Hour, "", leasehold.StatePending, -1, 1, "", false},
		{leasehold.OutcomeCancelled, 0, "c-err", leasehold.StateCancelled, -1, 0, "c-err", true},
		{leasehold.OutcomeLeaseLost, 0, "l-err", leasehold.StatePending, -1, 0, "l-err", false},
	}
}

// testFinishOutcomes finishes one job per outcome in a single batch and
// checks the state, run_at, free_attempts, last_error, finished_at and
// lease fields of each, and that each history row is ended with its
// outcome, error and the job's last heartbeat. A cancel without error text
// keeps the previous last_error.
func testFinishOutcomes(c *tc) {
	cases := finishCases()
	rows := c.insertN(len(cases)+1, "q", "k")
	// The extra job fails once (last_error "old"), then is cancelled
	// without error text.
	extra := c.claimID(c.d, rows[len(cases)].ID, "w", liveTTL, false)
	retry := token(extra.ID, "w", 1, statemachine.Ending{Outcome: leasehold.OutcomeRetried, Error: "old"})
	c.eqIDs("Finish retried", c.finish(retry), []int64{extra.ID})

	var leases []driver.LeaseRef
	held := map[int64]*leasehold.JobRow{}
	for _, r := range rows {
		j := c.claimID(c.d, r.ID, "w", liveTTL, false)
		leases = append(leases, ref(j))
	}
	if hb := c.heartbeat("w", liveTTL, leases...); len(hb) != len(rows) {
		c.Fatalf("Heartbeat renewed %d of %d leases", len(hb), len(rows))
	}
	var ps []*driver.FinishParams
	for i, tcase := range cases {
		held[rows[i].ID] = c.get(rows[i].ID)
		e := statemachine.Ending{Outcome: tcase.outcome, Delay: tcase.delay, Error: tcase.err}
		ps = append(ps, token(rows[i].ID, "w", 1, e))
	}
	held[extra.ID] = c.get(extra.ID)
	ps = append(ps, token(extra.ID, "w", 2, statemachine.Ending{Outcome: leasehold.OutcomeCancelled}))

	before := c.now()
	got := c.finish(ps...)
	after := c.now()
	all := ids(rows)
	c.eqIDs("Finish batch", got, all)

	for i, tcase := range cases {
		c.checkFinished(rows[i].ID, held[rows[i].ID], tcase, before, after)
	}
	cancelled := finishCase{leasehold.OutcomeCancelled, 0, "", leasehold.StateCancelled, -1, 0, "old", true}
	c.checkFinished(extra.ID, held[extra.ID], cancelled, before, after)

	// Only released and lease_lost are claimable now (they kept their
	// place in line): the others are terminal or delayed.
	c.eqIDs("Claim after Finish", ids(c.claim("q", "w2", 10, true)), []int64{rows[4].ID, rows[6].ID})
}

// checkFinished checks job id after Finish of tcase; held is the job just
// before.
func (c *tc) checkFinished(id int64, held *leasehold.JobRow, tcase finishCase, before, after time.Time) {
	c.Helper()
	j := c.get(id)
	what := func(f string) string { return fmt.Sprintf("Finish %s: %s", tcase.outcome, f) }
	c.eq(what("State"), j.State, tcase.state)
	c.eq(what("Attempt"), j.Attempt, held.Attempt)
	c.eq(what("FreeAttempts"), j.FreeAttempts, tcase.free)
	if tcase.outcome != leasehold.OutcomeSnoozed && tcase.outcome != leasehold.OutcomeReleased {
		c.eq(what("LastError"), j.LastError, tcase.lastErr)
	}
	c.eq(what("LeaseOwner"), j.LeaseOwner, "")
	c.zeroTime(what("LeaseUntil"), j.LeaseUntil)
	c.sameTime(what("HeartbeatAt (kept)"), j.HeartbeatAt, held.HeartbeatAt)
	if tcase.terminal {
		c.timeIn(what("FinishedAt"), j.FinishedAt, before, after)
	} else {
		c.zeroTime(what("FinishedAt"), j.FinishedAt)
	}
	if tcase.runAfter >= 0 {
		c.timeIn(what("RunAt"), j.RunAt, before.Add(tcase.runAfter), after.Add(tcase.runAfter))
	} else if !tcase.terminal {
		// Released and lease_lost jobs keep their place in line.
		c.sameTime(what("RunAt (kept)"), j.RunAt, held.RunAt)
	}
	as := c.attempts(id)
	if len(as) != held.Attempt {
		c.Errorf("%s: %d attempt rows, want %d", what("history"), len(as), held.Attempt)
		return
	}
	a := as[len(as)-1]
	c.attemptIs(a, id, held.Attempt, "w", tcase.outcome)
	c.eq(what("attempt row Error"), a.Error, tcase.err)
	c.timeIn(what("attempt row EndedAt"), a.EndedAt, before, after)
	c.sameTime(what("attempt row HeartbeatAt (copied from the job)"), a.HeartbeatAt, held.HeartbeatAt)
}

// testFinishInvalidTransition checks that Finish refuses, with an error
// and without writing anything, a batch holding a transition that
// Transition.Validate refuses: one the state machine gives for an outcome
// it does not know, or one no state machine could mean.
func testFinishInvalidTransition(c *tc) {
	rows := c.insertN(2, "q", "k")
	h := c.claimID(c.d, rows[0].ID, "w", liveTTL, false)
	other := c.claimID(c.d, rows[1].ID, "w", liveTTL, false)
	s, otherSnap := c.snap(h.ID), c.snap(other.ID)
	valid := fin(h, leasehold.OutcomeCompleted).Transition
	bad := map[string]driver.Transition{
		"outcome bogus":     fin(h, "bogus").Transition,
		"outcome running":   fin(h, leasehold.OutcomeRunning).Transition,
		"state processing":  withState(valid, leasehold.StateProcessing),
		"state unknown":     withState(valid, "done"),
		"finished, pending": withState(valid, leasehold.StatePending),
	}
	for name, t := range bad {
		p := &driver.FinishParams{ID: h.ID, Owner: "w", Attempt: h.Attempt, Transition: t}
		if got, err := c.d.Finish(c.ctx, nil, []*driver.FinishParams{p}); err == nil {
			c.Errorf("Finish with an invalid transition (%s) = %v, nil; want an error", name, got)
		}
		// In a batch with a valid entry, nothing is written either.
		if got, err := c.d.Finish(c.ctx, nil, []*driver.FinishParams{fin(other, leasehold.OutcomeCompleted), p}); err == nil {
			c.Errorf("Finish of a batch with an invalid transition (%s) = %v, nil; want an error", name, got)
		}
	}
	c.unchanged("Finish with an invalid transition", s)
	c.unchanged("Finish of a batch with an invalid transition", otherSnap)
}

// withState returns t moved to state s.
func withState(t driver.Transition, s leasehold.JobState) driver.Transition {
	t.State = s
	return t
}
