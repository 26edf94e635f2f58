package drivertest

import (
	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// testEndedAttempts checks driver.EndedReader, for drivers that implement
// it: one call returns the history row (owner, outcome) of each ended
// attempt among the leases given, whoever ended it (a finish of its
// owner, a takeover), and leaves out the running attempts, the attempts
// never claimed and the jobs that do not exist; a list of hundreds of
// leases, as a client reads after a lost commit reply, is one call.
func testEndedAttempts(c *tc) {
	r, ok := c.d.(driver.EndedReader)
	if !ok {
		c.Skip("the driver does not implement driver.EndedReader")
	}
	many := c.insertN(300, "q", "k")
	claimed := c.claim("q", "w", len(many), false)
	c.eq("jobs claimed", len(claimed), len(many))
	ps := make([]*driver.FinishParams, len(claimed))
	want := map[driver.LeaseRef]driver.EndedAttempt{}
	for i, j := range claimed {
		o := leasehold.OutcomeCompleted
		if i%3 == 0 {
			o = leasehold.OutcomeRetried
		}
		ps[i] = fin(j, o)
		want[ref(j)] = driver.EndedAttempt{ID: j.ID, Attempt: j.Attempt, Owner: "w", Outcome: o}
	}
	c.eqIDs("Finish", c.finish(ps...), ids(claimed))

	taken := c.insert(job("q2", "k"))[0]
	lost := c.claimID(c.d, taken.ID, "w", shortTTL, false)
	c.waitExpired(lost)
	over := c.claimID(c.second(), taken.ID, "w2", liveTTL, true)
	want[ref(lost)] = driver.EndedAttempt{ID: taken.ID, Attempt: 1, Owner: "w", Outcome: leasehold.OutcomeLeaseExpired}
	running := c.claimID(c.d, c.insert(job("q2", "k"))[0].ID, "w", liveTTL, false)
	never := c.insert(job("q2", "k"))[0]

	refs := make([]driver.LeaseRef, 0, len(want)+5)
	for l := range want {
		refs = append(refs, l)
	}
	refs = append(refs, ref(over), ref(running), driver.LeaseRef{ID: never.ID, Attempt: 1},
		driver.LeaseRef{ID: claimed[0].ID, Attempt: 2}, driver.LeaseRef{ID: never.ID + 1_000_000, Attempt: 1})
	got, err := r.EndedAttempts(c.ctx, refs)
	if err != nil {
		c.Fatalf("EndedAttempts: %v", err)
	}
	seen := map[driver.LeaseRef]bool{}
	for _, e := range got {
		l := driver.LeaseRef{ID: e.ID, Attempt: e.Attempt}
		if seen[l] {
			c.Errorf("EndedAttempts returned job %d attempt %d twice", e.ID, e.Attempt)
		}
		seen[l] = true
		if w, ok := want[l]; !ok {
			c.Errorf("EndedAttempts returned %+v, an attempt not ended", e)
		} else if e != w {
			c.Errorf("EndedAttempts returned %+v, want %+v", e, w)
		}
	}
	if len(seen) != len(want) {
		c.Errorf("EndedAttempts returned %d ended attempts, want %d", len(seen), len(want))
	}
	if none, err := r.EndedAttempts(c.ctx, nil); err != nil || len(none) != 0 {
		c.Errorf("EndedAttempts of no lease = %v, %v; want nothing", none, err)
	}
}
