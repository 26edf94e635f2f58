package drivertest

import (
	"github.com/leasehold/leasehold/driver"
)

// testTakeOverNeverOwnLease: neither Claim nor ClaimByID with TakeOver
// takes over an expired lease of its own owner, who still answers for it
// (driver.ClaimParams TakeOver, ClaimByIDParams TakeOver): the job and its
// history are left as they were, and the lease is still claimable by
// another owner.
func testTakeOverNeverOwnLease(c *tc) {
	rows := c.insert(job("own", "k"))
	held := c.expireAll("w", rows)
	s := c.snap(held[0].ID)
	if got := c.claim("own", "w", 10, true); len(got) != 0 {
		c.Errorf("Claim with TakeOver by the lease's own owner took %v, want none", ids(got))
	}
	if j, err := c.d.ClaimByID(c.ctx, &driver.ClaimByIDParams{ID: held[0].ID, Owner: "w", TTL: liveTTL, TakeOver: true}); err != nil || j != nil {
		c.Errorf("ClaimByID with TakeOver by the lease's own owner = %v, %v; want nil, nil", j, err)
	}
	c.unchanged("takeovers by the lease's own owner", s)
	j := c.claimID(c.d, held[0].ID, "other", liveTTL, true)
	c.eq("Attempt taken over by another owner", j.Attempt, 2)
	c.eq("TakenOver by another owner", j.TakenOver, true)
}
