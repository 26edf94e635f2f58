package drivertest

import (
	"time"

	"github.com/leasehold/leasehold"
)

// testPeriodicClaimDeadline checks that a slot claim carrying a Deadline
// is refused as Late, writing nothing, once the database clock is past
// it: of a schedule with no row yet (no row is created) and of one whose
// last slot is earlier (the last slot and its job stay). A deadline still
// ahead claims the slot, and a slot already taken is reported taken,
// not late, whatever its deadline.
func testPeriodicClaimDeadline(c *tc) {
	now := c.now()
	base := now.Truncate(time.Second).Add(-time.Minute)
	past, ahead := now.Add(-time.Second), now.Add(time.Hour)

	first := slotClaim("late", base, 0)
	first.Deadline = past
	res, err := c.d.PeriodicInsert(c.ctx, first)
	if err != nil || res.Claimed || !res.Late || res.Job != nil {
		c.Fatalf("claim of a new schedule's slot past its deadline = %+v, %v; want refused as late, no job", res, err)
	}
	rows, err := c.d.PeriodicList(c.ctx)
	if err != nil {
		c.Fatalf("PeriodicList: %v", err)
	}
	c.eq("schedules recorded by a late claim", len(rows), 0)
	c.eq("jobs after a late claim", len(c.list(&leasehold.ListParams{Kind: "tick"})), 0)

	res, err = c.d.PeriodicInsert(c.ctx, slotClaim("late", base, 0))
	if err != nil || !res.Claimed || res.Late {
		c.Fatalf("claim of slot 0 with no deadline = %+v, %v; want claimed", res, err)
	}
	won := res.Job.Job.ID

	late := slotClaim("late", base, 1)
	late.Deadline = past
	res, err = c.d.PeriodicInsert(c.ctx, late)
	if err != nil || res.Claimed || !res.Late || res.Job != nil {
		c.Fatalf("claim of slot 1 past its deadline = %+v, %v; want refused as late, no job", res, err)
	}
	c.eq("jobs after the late claim of slot 1", len(c.list(&leasehold.ListParams{Kind: "tick"})), 1)
	row := c.periodicRow("late")
	c.sameTime("last slot after the late claim", row.LastSlot, base)
	c.eq("last job after the late claim", row.LastJobID, won)

	taken := slotClaim("late", base, 0)
	taken.Deadline = past
	res, err = c.d.PeriodicInsert(c.ctx, taken)
	if err != nil || res.Claimed || res.Late {
		c.Fatalf("claim of the taken slot 0 past its deadline = %+v, %v; want refused as taken, not late", res, err)
	}

	onTime := slotClaim("late", base, 1)
	onTime.Deadline = ahead
	res, err = c.d.PeriodicInsert(c.ctx, onTime)
	if err != nil || !res.Claimed || res.Late || res.Job == nil || res.Job.Job == nil {
		c.Fatalf("claim of slot 1 before its deadline = %+v, %v; want claimed with its job", res, err)
	}
	c.eq("jobs after the on-time claim", len(c.list(&leasehold.ListParams{Kind: "tick"})), 2)
	row = c.periodicRow("late")
	c.sameTime("last slot after the on-time claim", row.LastSlot, base.Add(time.Second))
	c.eq("last job after the on-time claim", row.LastJobID, res.Job.Job.ID)
}
