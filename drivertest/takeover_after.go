package drivertest

import (
	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// testTakeOverAfterCursor checks ClaimParams.After against the takeover
// candidates: the claim key bounds the pending jobs only, so a cursor
// claim with TakeOver takes over an expired lease of a job that sorts
// before the key (ending its attempt as lease_expired), and one without
// TakeOver leaves it. PostgreSQL runs the two kinds as different
// statements (pgdriver's claimSets).
func testTakeOverAfterCursor(c *tc) {
	rows := c.insertN(3, "cur", "k")
	c.expireAll("old", rows[:1])
	c.eqIDs("claim of the pending jobs", ids(c.claim("cur", "mid", 10, false)), []int64{rows[1].ID, rows[2].ID})
	last := driver.KeyOf(rows[2])
	cursorClaim := func(takeOver bool) []*leasehold.JobRow {
		c.Helper()
		got, err := c.d.Claim(c.ctx, &driver.ClaimParams{
			Queue: "cur", Kinds: []string{"k"}, Owner: "new", TTL: liveTTL, Limit: 10, TakeOver: takeOver, After: &last,
		})
		if err != nil {
			c.Fatalf("Claim after %+v (TakeOver %v): %v", last, takeOver, err)
		}
		return got
	}
	if got := cursorClaim(false); len(got) != 0 {
		c.Errorf("cursor claim without TakeOver took %v; want none", ids(got))
	}
	c.eqIDs("cursor claim with TakeOver", ids(cursorClaim(true)), []int64{rows[0].ID})
	c.history(rows[0].ID, "old", leasehold.OutcomeLeaseExpired, "new", leasehold.OutcomeRunning)
	c.eq("Attempt after takeover", c.get(rows[0].ID).Attempt, 2)
}
