package drivertest

import (
	"fmt"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// testHeartbeat checks that one Heartbeat call renews every lease it is
// given to db now + TTL and sets heartbeat_at, leaves out (and does not
// touch) leases that are not held, and reports cancel requests.
func testHeartbeat(c *tc) {
	rows := c.insertN(6, "q", "k")
	var mine []*leasehold.JobRow
	for _, r := range rows[:3] {
		mine = append(mine, c.claimID(c.d, r.ID, "w", liveTTL, false))
	}
	other := c.claimID(c.d, rows[3].ID, "other", liveTTL, false)
	done := c.claimID(c.d, rows[4].ID, "w", liveTTL, false)
	c.eqIDs("Finish", c.finish(fin(done, leasehold.OutcomeCompleted)), []int64{done.ID})
	untouched := []snapshot{c.snap(other.ID), c.snap(done.ID), c.snap(rows[5].ID)}

	const ttl = 10 * time.Minute
	leases := []driver.LeaseRef{
		ref(mine[0]), ref(mine[1]), ref(mine[2]),
		ref(other),                          // another owner's lease
		ref(done),                           // finished
		{ID: rows[5].ID},                    // pending, never claimed
		{ID: mine[0].ID, Attempt: 2},        // wrong attempt of a held lease
		{ID: rows[5].ID + 1000, Attempt: 1}, // no such job
	}
	before := c.now()
	hb := c.heartbeat("w", ttl, leases...)
	after := c.now()
	if len(hb) != 3 {
		c.Errorf("Heartbeat returned %d leases (%v), want the 3 held", len(hb), hb)
	}
	for _, j := range mine {
		cancel, ok := hb[j.ID]
		if !ok || cancel {
			c.Errorf("Heartbeat result for held job %d: present %v, cancel %v; want present, false", j.ID, ok, cancel)
		}
		g := c.get(j.ID)
		what := fmt.Sprintf("job %d after Heartbeat: ", j.ID)
		c.timeIn(what+"LeaseUntil", g.LeaseUntil, before.Add(ttl), after.Add(ttl))
		c.timeIn(what+"HeartbeatAt", g.HeartbeatAt, before, after)
		if g.State != leasehold.StateProcessing || g.LeaseOwner != "w" || g.Attempt != 1 {
			c.Errorf("%sstate %s owner %q attempt %d, want processing w 1", what, g.State, g.LeaseOwner, g.Attempt)
		}
	}
	for _, s := range untouched {
		c.unchanged("Heartbeat of a lease not held", s)
	}

	cj, err := c.d.CancelJob(c.ctx, mine[1].ID)
	if err != nil {
		c.Fatalf("CancelJob(processing): %v", err)
	}
	if !cj.CancelRequested || cj.State != leasehold.StateProcessing {
		c.Errorf("CancelJob(processing) = state %s cancel_requested %v, want processing true", cj.State, cj.CancelRequested)
	}
	hb = c.heartbeat("w", ttl, ref(mine[0]), ref(mine[1]), ref(mine[2]))
	want := map[int64]bool{mine[0].ID: false, mine[1].ID: true, mine[2].ID: false}
	c.eq("Heartbeat after CancelJob (id -> cancel requested)", hb, want)
}

// testHeartbeatKeepsLease checks that a renewed lease outlives its first
// expiry: no takeover once the db clock passes the original lease_until.
func testHeartbeatKeepsLease(c *tc) {
	j := c.insert(job("q", "k"))[0]
	h := c.claimID(c.d, j.ID, "w", 300*time.Millisecond, false)
	if hb := c.heartbeat("w", liveTTL, ref(h)); len(hb) != 1 {
		c.Fatalf("Heartbeat of a fresh lease = %v, want it renewed", hb)
	}
	c.waitPast(h.LeaseUntil)
	if got := c.claim("q", "thief", 10, true); len(got) != 0 {
		c.Errorf("Claim with TakeOver took renewed lease(s) %v", ids(got))
	}
	if got, err := c.d.ClaimByID(c.ctx, &driver.ClaimByIDParams{ID: j.ID, Owner: "thief", TTL: liveTTL, TakeOver: true}); err != nil || got != nil {
		c.Errorf("ClaimByID with TakeOver of a renewed lease = %v, %v; want nil, nil", got, err)
	}
	if hb := c.heartbeat("w", liveTTL, ref(h)); len(hb) != 1 {
		c.Errorf("owner's second Heartbeat = %v, want the lease still held", hb)
	}
}
