package drivertest

import (
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// testClaimOrder checks that claims take jobs by priority (lower first),
// then run_at, then id.
func testClaimOrder(c *tc) {
	now := c.now()
	mk := func(prio int, runAt time.Time) *driver.InsertParams {
		p := job("q", "k")
		p.Priority, p.RunAt = prio, runAt
		return p
	}
	oneMin, twoMin := now.Add(-time.Minute), now.Add(-2*time.Minute)
	rows := c.insert(
		mk(5, oneMin),  // 0: claimed last
		mk(1, oneMin),  // 1: third or fourth (same priority and run_at as 4)
		mk(1, twoMin),  // 2: second (older run_at)
		mk(-2, oneMin), // 3: first
		mk(1, oneMin),  // 4: third or fourth
	)
	tie := sorted(rows[1].ID, rows[4].ID) // same priority and run_at: by id
	want := []int64{rows[3].ID, rows[2].ID, tie[0], tie[1], rows[0].ID}
	for i, id := range want {
		got := c.claim("q", "w", 1, true)
		if len(got) != 1 {
			c.Fatalf("claim %d with Limit 1 returned %d jobs, want 1", i+1, len(got))
		}
		if got[0].ID != id {
			c.Errorf("claim %d took job %d (priority %d, run_at %v), want job %d",
				i+1, got[0].ID, got[0].Priority, got[0].RunAt, id)
		}
	}
}

// testClaimFilters checks that a claim takes only jobs of its queue and of
// a kind in Kinds, and at most Limit of them.
func testClaimFilters(c *tc) {
	a1, a2 := job("q", "a"), job("q", "a")
	b1, c1, o1 := job("q", "b"), job("q", "c"), job("other", "a")
	rows := c.insert(a1, a2, b1, c1, o1)
	claimKinds := func(queue string, limit int, kinds ...string) []*leasehold.JobRow {
		c.Helper()
		got, err := c.d.Claim(c.ctx, &driver.ClaimParams{
			Queue: queue, Kinds: kinds, Owner: "w", TTL: liveTTL, Limit: limit, TakeOver: true,
		})
		if err != nil {
			c.Fatalf("Claim(%s, %v): %v", queue, kinds, err)
		}
		return got
	}
	first := claimKinds("q", 2, "a", "b")
	if len(first) != 2 {
		c.Errorf("Claim with Limit 2 over 3 matching jobs returned %d", len(first))
	}
	rest := claimKinds("q", 10, "a", "b")
	c.eqIDs("Claim(q, [a b]) in two calls", append(ids(first), ids(rest)...), []int64{rows[0].ID, rows[1].ID, rows[2].ID})
	if got := claimKinds("q", 10, "a", "b"); len(got) != 0 {
		c.Errorf("third Claim(q, [a b]) = %v, want none", ids(got))
	}
	for _, r := range rows[3:] {
		j := c.get(r.ID)
		if j.State != leasehold.StatePending || j.Attempt != 0 {
			c.Errorf("job %d (kind %s, queue %s) state %s attempt %d: claimed by Claim(q, [a b])", r.ID, r.Kind, r.Queue, j.State, j.Attempt)
		}
	}
	c.eqIDs("Claim(other, [a])", ids(claimKinds("other", 10, "a")), []int64{rows[4].ID})
	c.eqIDs("Claim(q, [c])", ids(claimKinds("q", 10, "c")), []int64{rows[3].ID})
}
