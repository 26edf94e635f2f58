package drivertest

import (
	"fmt"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// testTakeOverFlagged checks JobRow.TakenOver, by which the engine reports
// the expired attempts its claims end (EventTakenOver): set on a row that
// a Claim, a cursor Claim or a ClaimByID with TakeOver took over from an
// expired lease, and false on a pending job claimed alongside or by id,
// on a claim that took over nothing, and on the row read back.
func testTakeOverFlagged(c *tc) {
	full := c.insertN(2, "flag", "k") // 0 expired, 1 pending
	cur := c.insertN(3, "flagcur", "k")
	byID := c.insertN(2, "flagid", "k") // 0 expired, 1 pending
	c.expireAll("old", []*leasehold.JobRow{full[0], cur[0], byID[0]})

	c.flags("Claim with TakeOver", c.claim("flag", "new", 10, true), map[int64]bool{full[0].ID: true, full[1].ID: false})

	// A cursor claim takes over too: claim the pending jobs first, then
	// one after the last of them finds only the expired lease.
	c.flags("Claim of pending jobs", c.claim("flagcur", "mid", 2, false),
		map[int64]bool{cur[1].ID: false, cur[2].ID: false})
	last := driver.KeyOf(cur[2])
	got, err := c.d.Claim(c.ctx, &driver.ClaimParams{
		Queue: "flagcur", Kinds: []string{"k"}, Owner: "new", TTL: liveTTL, Limit: 10, TakeOver: true, After: &last,
	})
	if err != nil {
		c.Fatalf("cursor Claim with TakeOver: %v", err)
	}
	c.flags("cursor Claim with TakeOver", got, map[int64]bool{cur[0].ID: true})

	c.flags("ClaimByID with TakeOver of a pending job",
		[]*leasehold.JobRow{c.claimID(c.d, byID[1].ID, "new", liveTTL, true)}, map[int64]bool{byID[1].ID: false})
	c.flags("ClaimByID with TakeOver of an expired lease",
		[]*leasehold.JobRow{c.claimID(c.d, byID[0].ID, "new", liveTTL, true)}, map[int64]bool{byID[0].ID: true})

	for _, j := range []*leasehold.JobRow{full[0], cur[0], byID[0]} {
		c.eq(fmt.Sprintf("job %d read back: TakenOver", j.ID), c.get(j.ID).TakenOver, false)
		c.history(j.ID, "old", leasehold.OutcomeLeaseExpired, "new", leasehold.OutcomeRunning)
	}
}

// flags checks that got holds exactly the jobs of want, each with
// TakenOver as want says.
func (c *tc) flags(what string, got []*leasehold.JobRow, want map[int64]bool) {
	c.Helper()
	if len(got) != len(want) {
		c.Fatalf("%s claimed %v, want %d jobs", what, ids(got), len(want))
	}
	for _, j := range got {
		w, ok := want[j.ID]
		if !ok {
			c.Fatalf("%s claimed job %d, want one of %v", what, j.ID, want)
		}
		c.eq(fmt.Sprintf("%s: job %d TakenOver", what, j.ID), j.TakenOver, w)
	}
}
