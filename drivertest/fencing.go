package drivertest

import (
	"fmt"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/statemachine"
)

// refused checks that Finish of each outcome with the token (id, owner,
// attempt) is refused: no error, id not returned.
func (c *tc) refused(what string, id int64, owner string, attempt int) {
	c.Helper()
	for _, o := range []leasehold.Outcome{leasehold.OutcomeCompleted, leasehold.OutcomeFailed, leasehold.OutcomeRetried} {
		got := c.finish(token(id, owner, attempt, statemachine.Ending{Outcome: o, Error: "late"}))
		if len(got) != 0 {
			c.Errorf("%s: Finish %s with (owner %q, attempt %d) accepted %v, want refused", what, o, owner, attempt, got)
		}
	}
}

// testFencingWrongToken checks that Finish and Heartbeat with a wrong owner
// or attempt, on a job never claimed, or on a job already finished, are
// refused and change nothing, and that a batch keeps only its valid
// entries.
func testFencingWrongToken(c *tc) {
	rows := c.insertN(3, "q", "k")
	j := c.claimID(c.d, rows[0].ID, "owner-a", liveTTL, false)
	s := c.snap(j.ID)
	tokens := []struct {
		owner   string
		attempt int
	}{{"owner-b", 1}, {"owner-a", 2}, {"owner-a", 0}, {"", 1}, {"", 0}}
	for _, tk := range tokens {
		what := fmt.Sprintf("wrong token (%q, %d)", tk.owner, tk.attempt)
		c.refused(what, j.ID, tk.owner, tk.attempt)
		if hb := c.heartbeat(tk.owner, 2*liveTTL, driver.LeaseRef{ID: j.ID, Attempt: tk.attempt}); len(hb) != 0 {
			c.Errorf("%s: Heartbeat renewed %v, want nothing", what, hb)
		}
	}
	c.unchanged("Finish/Heartbeat with a wrong token", s)

	never := c.snap(rows[1].ID)
	c.refused("job never claimed", rows[1].ID, "", 0)
	c.refused("job never claimed", rows[1].ID, "owner-a", 1)
	if hb := c.heartbeat("", liveTTL, driver.LeaseRef{ID: rows[1].ID}); len(hb) != 0 {
		c.Errorf("Heartbeat of a pending job renewed %v", hb)
	}
	c.unchanged("Finish/Heartbeat of a job never claimed", never)

	k := c.claimID(c.d, rows[2].ID, "owner-a", liveTTL, false)
	bad := fin(k, leasehold.OutcomeCompleted)
	bad.Attempt = 7
	c.eqIDs("Finish batch of one valid and one stale entry", c.finish(fin(j, leasehold.OutcomeCompleted), bad), []int64{j.ID})
	c.eq("state of the job whose entry was stale", c.get(k.ID).State, leasehold.StateProcessing)

	done := c.snap(j.ID)
	c.refused("job already completed, right token", j.ID, "owner-a", 1)
	if hb := c.heartbeat("owner-a", liveTTL, ref(j)); len(hb) != 0 {
		c.Errorf("Heartbeat of a completed job renewed %v", hb)
	}
	c.unchanged("Finish/Heartbeat of a completed job", done)
	c.history(j.ID, "owner-a", leasehold.OutcomeCompleted)
}

// testFencingAfterTakeOver checks that once a lease is taken over, the
// first owner's heartbeat and completion are refused and change nothing,
// while the new owner's completion succeeds.
func testFencingAfterTakeOver(c *tc) {
	j := c.insert(job("q", "k"))[0]
	a := c.claimID(c.d, j.ID, "owner-a", shortTTL, false)
	c.waitExpired(a)
	b := c.claimID(c.second(), j.ID, "owner-b", liveTTL, true)
	c.eq("Attempt of the new owner", b.Attempt, 2)
	s := c.snap(j.ID)

	if hb := c.heartbeat("owner-a", liveTTL, ref(a)); len(hb) != 0 {
		c.Errorf("late first owner's Heartbeat renewed %v, want nothing", hb)
	}
	c.refused("late first owner", j.ID, "owner-a", 1)
	c.refused("first owner with the new attempt", j.ID, "owner-a", 2)
	c.refused("new owner with the old attempt", j.ID, "owner-b", 1)
	c.unchanged("late first owner's writes", s)

	c.eqIDs("new owner's Finish", c.finish(fin(b, leasehold.OutcomeCompleted)), []int64{j.ID})
	got := c.get(j.ID)
	if got.State != leasehold.StateCompleted || got.Attempt != 2 {
		c.Errorf("after the new owner's completion: state %s attempt %d, want completed 2", got.State, got.Attempt)
	}
	c.history(j.ID, "owner-a", leasehold.OutcomeLeaseExpired, "owner-b", leasehold.OutcomeCompleted)
	c.refused("late first owner after completion", j.ID, "owner-a", 1)
}

// testFencingSameOwner checks that the attempt alone fences a lease when
// the same owner (one process) lost a lease and claimed the job again once
// the watcher had returned it (no claim takes over its own owner's lease):
// its stale attempt is refused, its current one accepted, also when both
// come in one Finish batch with the stale entry first, with different
// outcomes or both completed.
func testFencingSameOwner(c *tc) {
	rows := c.insertN(3, "q", "k")
	for _, r := range rows {
		c.claimID(c.d, r.ID, "w", shortTTL, false)
	}
	c.waitExpired(c.get(rows[0].ID), c.get(rows[1].ID), c.get(rows[2].ID))
	c.rescue(c.d)
	a := c.claimID(c.d, rows[0].ID, "w", liveTTL, false)
	b := c.claimID(c.d, rows[1].ID, "w", liveTTL, false)
	d := c.claimID(c.d, rows[2].ID, "w", liveTTL, false)
	c.eq("Attempt of the same owner's second claim", a.Attempt, 2)

	s := c.snap(a.ID)
	c.refused("same owner, stale attempt", a.ID, "w", 1)
	if hb := c.heartbeat("w", liveTTL, driver.LeaseRef{ID: a.ID, Attempt: 1}); len(hb) != 0 {
		c.Errorf("Heartbeat with the stale attempt renewed %v", hb)
	}
	c.unchanged("same owner's stale writes", s)
	c.eqIDs("Finish of the current attempt", c.finish(fin(a, leasehold.OutcomeCompleted)), []int64{a.ID})
	c.history(a.ID, "w", leasehold.OutcomeLeaseExpired, "w", leasehold.OutcomeCompleted)

	stale := fin(b, leasehold.OutcomeLeaseLost)
	stale.Attempt = 1
	c.eqIDs("Finish batch [stale attempt 1, current attempt 2] of one job",
		c.finish(stale, fin(b, leasehold.OutcomeCompleted)), []int64{b.ID})
	c.eq("state after the batch", c.get(b.ID).State, leasehold.StateCompleted)
	c.history(b.ID, "w", leasehold.OutcomeLeaseExpired, "w", leasehold.OutcomeCompleted)

	staleDone := fin(d, leasehold.OutcomeCompleted)
	staleDone.Attempt = 1
	c.eqIDs("Finish batch [attempt 1 completed, attempt 2 completed] of one job",
		c.finish(staleDone, fin(d, leasehold.OutcomeCompleted)), []int64{d.ID})
	c.eq("state after the completed batch", c.get(d.ID).State, leasehold.StateCompleted)
	c.history(d.ID, "w", leasehold.OutcomeLeaseExpired, "w", leasehold.OutcomeCompleted)
}

// testFencingMixedBatch: a wrong or stale token is refused, and changes
// nothing, also inside a batch whose transitions or owners differ (the
// per-lease statement, not the uniform one).
func testFencingMixedBatch(c *tc) {
	rows := c.insertN(3, "q", "k")
	x := c.claimID(c.d, rows[0].ID, "owner-a", liveTTL, false)
	y := c.claimID(c.d, rows[1].ID, "owner-a", liveTTL, false)
	s := c.snap(x.ID)
	wrongOwner := fin(x, leasehold.OutcomeCompleted)
	wrongOwner.Owner = "owner-b"
	c.eqIDs("mixed batch [x by wrong owner, y retried]",
		c.finish(wrongOwner, token(y.ID, "owner-a", 1, statemachine.Ending{Outcome: leasehold.OutcomeRetried, Error: "e"})), []int64{y.ID})
	c.unchanged("x after a wrong owner's entry in a mixed batch", s)

	z := c.claimID(c.d, rows[2].ID, "w", shortTTL, false)
	c.waitExpired(z)
	c.rescue(c.d)
	z2 := c.claimID(c.d, rows[2].ID, "w", liveTTL, false)
	s = c.snap(z2.ID)
	stale := fin(z2, leasehold.OutcomeCompleted)
	stale.Attempt = 1
	c.eqIDs("mixed batch [z stale attempt, x completed]", c.finish(stale, fin(x, leasehold.OutcomeFailed)), []int64{x.ID})
	c.unchanged("z after its stale attempt in a mixed batch", s)
}

// testFencingGroupedBatch: in a batch of several transitions with many
// leases of one (the SQLite driver writes those as a uniform batch, the
// others apart, in one transaction), a stale attempt among the many and a
// wrong owner apart are refused and change nothing, and the others apply.
func testFencingGroupedBatch(c *tc) {
	rows := c.insertN(groupedLeases+2, "q", "k")
	z := c.claimID(c.d, rows[0].ID, "a", shortTTL, false)
	c.waitExpired(z)
	c.rescue(c.d)
	z = c.claimID(c.d, rows[0].ID, "a", liveTTL, false)
	held := []*leasehold.JobRow{z}
	for _, r := range rows[1:] {
		held = append(held, c.claimID(c.d, r.ID, "a", liveTTL, false))
	}
	first, odd := held[1], held[len(held)-1]
	staleZ, zSnap, oddSnap := fin(z, leasehold.OutcomeCompleted), c.snap(z.ID), c.snap(odd.ID)
	staleZ.Attempt = 1
	wrongOwner := fin(odd, leasehold.OutcomeCompleted)
	wrongOwner.Owner = "b"
	ps := []*driver.FinishParams{
		token(first.ID, "a", 1, statemachine.Ending{Outcome: leasehold.OutcomeRetried, Delay: time.Hour, Error: "declined"}),
		staleZ, wrongOwner,
	}
	for _, j := range held[2 : len(held)-1] {
		ps = append(ps, fin(j, leasehold.OutcomeCompleted))
	}
	want := ids(held[1 : len(held)-1])
	c.eqIDs("grouped batch [first retried, z stale, odd by wrong owner, completions]", c.finish(ps...), want)
	c.eq("first's state", c.get(first.ID).State, leasehold.StatePending)
	c.history(first.ID, "a", leasehold.OutcomeRetried)
	c.unchanged("z after its stale attempt", zSnap)
	c.unchanged("odd after a wrong owner's entry", oddSnap)
	for _, j := range held[2 : len(held)-1] {
		c.eq(fmt.Sprintf("job %d's state", j.ID), c.get(j.ID).State, leasehold.StateCompleted)
	}
}
