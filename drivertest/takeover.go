package drivertest

import (
	"fmt"
	"sync"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// testTakeOver checks that an expired lease (db clock) is taken over by
// Claim and ClaimByID with TakeOver, as attempt n+1, ending the previous
// history row with lease_expired; and that it is not taken without
// TakeOver, nor when the lease is live, the budget is exhausted (counting
// free attempts) or a cancel was requested.
func testTakeOver(c *tc) {
	mk := func(queue string, maxAttempts int) *driver.InsertParams {
		p := job(queue, "k")
		p.MaxAttempts = maxAttempts
		return p
	}
	rows := c.insert(
		mk("take", 3), // 0: taken over by Claim
		mk("byid", 3), // 1: taken over by ClaimByID
		mk("take", 3), // 2: live lease
		mk("take", 1), // 3: budget exhausted
		mk("take", 3), // 4: cancel requested
		mk("take", 1), // 5: snoozed once, then claimed: 2 attempts, 1 free, budget 1: exhausted
		mk("take", 2), // 6: snoozed once, then claimed: 2 attempts, 1 free, budget 2: may be taken
	)
	for _, i := range []int{5, 6} {
		j := c.claimID(c.d, rows[i].ID, "old", liveTTL, false)
		c.eqIDs("Finish snoozed", c.finish(fin(j, leasehold.OutcomeSnoozed)), []int64{j.ID})
	}
	held := make([]*leasehold.JobRow, len(rows))
	for i, r := range rows {
		ttl := shortTTL
		if i == 2 {
			ttl = liveTTL
		}
		held[i] = c.claimID(c.d, r.ID, "old", ttl, false)
	}
	// The leases taken over below were renewed once: their history row
	// must keep that last heartbeat.
	if hb := c.heartbeat("old", shortTTL, ref(held[0]), ref(held[1])); len(hb) != 2 {
		c.Fatalf("Heartbeat renewed %d of 2 leases", len(hb))
	}
	// The renewal moved their lease_until: wait out the renewed leases.
	held[0], held[1] = c.get(held[0].ID), c.get(held[1].ID)
	if _, err := c.d.CancelJob(c.ctx, rows[4].ID); err != nil {
		c.Fatalf("CancelJob(processing): %v", err)
	}
	c.waitExpired(held[0], held[1], held[3], held[4], held[5], held[6])
	snaps := make([]snapshot, len(rows))
	for i, r := range rows {
		snaps[i] = c.snap(r.ID)
	}

	if got := c.claim("take", "new", 10, false); len(got) != 0 {
		c.Errorf("Claim without TakeOver took %v, want none", ids(got))
	}
	if j, err := c.d.ClaimByID(c.ctx, &driver.ClaimByIDParams{ID: rows[1].ID, Owner: "new", TTL: liveTTL}); err != nil || j != nil {
		c.Errorf("ClaimByID without TakeOver of an expired lease = %v, %v; want nil, nil", j, err)
	}
	c.unchanged("claims without TakeOver", snaps[0])
	c.unchanged("claims without TakeOver", snaps[1])

	before := c.now()
	got := c.claim("take", "new", 10, true)
	byID := c.claimID(c.d, rows[1].ID, "new", liveTTL, true)
	after := c.now()
	c.eqIDs("Claim with TakeOver", ids(got), []int64{rows[0].ID, rows[6].ID})
	for _, j := range append(got, byID) {
		c.eq(fmt.Sprintf("job %d taken over: Attempt", j.ID), j.Attempt, c.get(j.ID).Attempt)
		c.eq(fmt.Sprintf("job %d taken over: LeaseOwner", j.ID), j.LeaseOwner, "new")
		c.timeIn(fmt.Sprintf("job %d taken over: LeaseUntil", j.ID), j.LeaseUntil, before.Add(liveTTL), after.Add(liveTTL))
	}
	c.eq("Attempt after takeover", c.get(rows[0].ID).Attempt, 2)
	c.eq("Attempt after takeover", c.get(rows[1].ID).Attempt, 2)
	c.eq("Attempt after takeover", c.get(rows[6].ID).Attempt, 3)
	for _, i := range []int{0, 1} {
		as := c.history(rows[i].ID, "old", leasehold.OutcomeLeaseExpired, "new", leasehold.OutcomeRunning)
		if len(as) == 2 {
			c.timeIn("ended_at of the expired attempt", as[0].EndedAt, held[i].LeaseUntil, after)
			if as[0].HeartbeatAt.IsZero() {
				c.Errorf("job %d: the expired attempt lost its last heartbeat", rows[i].ID)
			}
		}
		if hb := c.get(rows[i].ID).HeartbeatAt; !hb.IsZero() {
			c.Errorf("job %d: new lease has heartbeat_at %v before any renewal", rows[i].ID, hb)
		}
	}
	c.history(rows[6].ID, "old", leasehold.OutcomeSnoozed, "old", leasehold.OutcomeLeaseExpired, "new", leasehold.OutcomeRunning)

	why := map[int]string{2: "live lease", 3: "budget exhausted", 4: "cancel requested", 5: "budget exhausted (free attempts counted)"}
	for i, reason := range why {
		if j, err := c.d.ClaimByID(c.ctx, &driver.ClaimByIDParams{ID: rows[i].ID, Owner: "new", TTL: liveTTL, TakeOver: true}); err != nil || j != nil {
			c.Errorf("ClaimByID with TakeOver of job with %s = %v, %v; want nil, nil", reason, j, err)
		}
		c.unchanged("takeover of a job with "+reason, snaps[i])
	}
}

// testTakeOverRace races 8 claimers with TakeOver (half on a second
// driver) over 20 expired leases, then 16 ClaimByID over one more in another queue: each
// expired lease must be taken over exactly once, as attempt 2.
func testTakeOverRace(c *tc) {
	const jobs, racers = 20, 8
	rows := append(c.insertN(jobs, "q", "k"), c.insert(job("byid", "k"))...)
	var held []*leasehold.JobRow
	for _, r := range rows {
		held = append(held, c.claimID(c.d, r.ID, "old", shortTTL, false))
	}
	c.waitExpired(held...)
	d2 := c.second()
	var (
		mu    sync.Mutex
		owner = map[int64]string{}
		wg    sync.WaitGroup
		start = make(chan struct{})
	)
	for i := range racers {
		d, name := c.d, fmt.Sprintf("racer-%d", i)
		if i%2 == 1 {
			d = d2
		}
		wg.Go(func() {
			<-start
			for {
				got, err := d.Claim(c.ctx, &driver.ClaimParams{
					Queue: "q", Kinds: []string{"k"}, Owner: name, TTL: liveTTL, Limit: 3, TakeOver: true,
				})
				if err != nil {
					c.Errorf("%s: Claim: %v", name, err)
					return
				}
				mu.Lock()
				for _, j := range got {
					if prev, ok := owner[j.ID]; ok {
						c.Errorf("job %d taken over twice: by %s and by %s", j.ID, prev, name)
					}
					owner[j.ID] = name
					if j.Attempt != 2 {
						c.Errorf("%s took over job %d as attempt %d, want 2", name, j.ID, j.Attempt)
					}
				}
				mu.Unlock()
				if len(got) == 0 {
					return
				}
			}
		})
	}
	close(start)
	wg.Wait()
	if len(owner) != jobs {
		c.Errorf("%d of %d expired jobs taken over", len(owner), jobs)
	}
	for id, name := range owner {
		c.history(id, "old", leasehold.OutcomeLeaseExpired, name, leasehold.OutcomeRunning)
	}
	last := rows[jobs].ID
	if winner := raceClaimByID(c, last, true, 16); winner != "" {
		c.eq("Attempt after ClaimByID takeover race", c.get(last).Attempt, 2)
		c.history(last, "old", leasehold.OutcomeLeaseExpired, winner, leasehold.OutcomeRunning)
	}
}
