package drivertest

import (
	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// testPausedQueueNotClaimed: while a queue is paused, neither Claim (its
// pending jobs nor its expired leases) nor ClaimByID leases its jobs, from
// this driver or another process's; other queues are claimed as usual;
// leases held when the pause came keep heartbeating and finish. Pause and
// resume are idempotent; resume makes the jobs claimable again.
func testPausedQueueNotClaimed(c *tc) {
	rows := c.insertN(4, "q", "k")
	other := c.insert(job("other", "k"))[0]
	running := c.claimID(c.d, rows[0].ID, "w", liveTTL, false)
	expiring := c.claimID(c.d, rows[1].ID, "dead", shortTTL, false)

	c.pause("q")
	c.waitExpired(expiring)
	for _, d := range []driver.Driver{c.d, c.second()} {
		got, err := d.Claim(c.ctx, &driver.ClaimParams{
			Queue: "q", Kinds: []string{"k"}, Owner: "w2", TTL: liveTTL, Limit: 10, TakeOver: true,
		})
		if err != nil {
			c.Fatalf("Claim of a paused queue: %v", err)
		}
		c.eqIDs("jobs claimed from a paused queue (pending and expired)", ids(got), nil)
		j, err := d.ClaimByID(c.ctx, &driver.ClaimByIDParams{ID: rows[2].ID, Owner: "w2", TTL: liveTTL})
		if err != nil || j != nil {
			c.Fatalf("ClaimByID of a paused queue's job = %v, %v; want nil, nil (not claimable)", j, err)
		}
	}
	c.eqIDs("jobs claimed from another queue", ids(c.claim("other", "w", 10, false)), []int64{other.ID})

	if held := c.heartbeat("w", liveTTL, ref(running)); len(held) != 1 {
		c.Fatalf("heartbeat of a paused queue's running job kept %v, want the lease", held)
	}
	c.eqIDs("finish of a paused queue's running job", c.finish(fin(running, leasehold.OutcomeCompleted)), []int64{running.ID})
	c.eq("state of the paused queue's pending job", c.get(rows[3].ID).State, leasehold.StatePending)

	c.resume("q")
	c.resume("q")
	c.resume("never-paused")
	got := c.claim("q", "w2", 10, true)
	c.eqIDs("jobs claimed after resume", ids(got), []int64{rows[1].ID, rows[2].ID, rows[3].ID})
}

// testQueueStatsPaused: QueueStats reports every paused queue with the
// time it was paused, a paused queue with no jobs included; pausing again
// keeps that time; a resumed queue is no longer paused, and a resumed
// queue with no jobs is no longer listed.
func testQueueStatsPaused(c *tc) {
	c.insert(job("b", "k"), job("d", "k"))
	before := c.now()
	c.pause("b")
	c.pause("a-empty")
	after := c.now()
	first := c.pausedStats()
	c.eq("queues in QueueStats", queueNames(first), []string{"a-empty", "b", "d"})
	c.eq("paused flags", pausedFlags(first), []bool{true, true, false})
	c.eq("counts of a paused queue with no jobs", len(first[0].Counts), 0)
	c.timeIn("PausedAt of b", first[1].PausedAt, before, after)
	c.zeroTime("PausedAt of d (not paused)", first[2].PausedAt)

	c.waitPast(after)
	c.pause("b")
	c.sameTime("PausedAt of b after a second pause", c.pausedStats()[1].PausedAt, first[1].PausedAt)

	c.resume("b")
	c.resume("a-empty")
	last := c.pausedStats()
	c.eq("queues in QueueStats after resume", queueNames(last), []string{"b", "d"})
	c.eq("paused flags after resume", pausedFlags(last), []bool{false, false})
	c.zeroTime("PausedAt of b after resume", last[0].PausedAt)
}

// pause pauses queue, failing the test on an error.
func (c *tc) pause(queue string) {
	c.Helper()
	if err := c.d.PauseQueue(c.ctx, queue); err != nil {
		c.Fatalf("PauseQueue(%s): %v", queue, err)
	}
}

// resume resumes queue, failing the test on an error.
func (c *tc) resume(queue string) {
	c.Helper()
	if err := c.d.ResumeQueue(c.ctx, queue); err != nil {
		c.Fatalf("ResumeQueue(%s): %v", queue, err)
	}
}

// pausedStats reads QueueStats.
func (c *tc) pausedStats() []*leasehold.QueueStats {
	c.Helper()
	qs, err := c.d.QueueStats(c.ctx)
	if err != nil {
		c.Fatalf("QueueStats: %v", err)
	}
	return qs
}

// queueNames returns the queue of each entry of qs.
func queueNames(qs []*leasehold.QueueStats) []string {
	out := make([]string, len(qs))
	for i, q := range qs {
		out[i] = q.Queue
	}
	return out
}

// pausedFlags returns the Paused flag of each entry of qs.
func pausedFlags(qs []*leasehold.QueueStats) []bool {
	out := make([]bool, len(qs))
	for i, q := range qs {
		out[i] = q.Paused
	}
	return out
}
