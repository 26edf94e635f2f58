package drivertest

import (
	"errors"
	"fmt"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// purge runs Purge.
func (c *tc) purge(olderThan time.Duration, limit int) int64 {
	c.Helper()
	n, err := c.d.Purge(c.ctx, &driver.PurgeParams{OlderThan: olderThan, Limit: limit})
	if err != nil {
		c.Fatalf("Purge(%v, %d): %v", olderThan, limit, err)
	}
	return n
}

// testPurge checks that Purge deletes only terminal jobs finished more than
// OlderThan ago (by the db clock), at most Limit per call, with their
// history, and never pending or processing jobs.
func testPurge(c *tc) {
	rows := c.insertN(6, "q", "k")
	var old []*leasehold.JobRow
	for i, o := range []leasehold.Outcome{leasehold.OutcomeCompleted, leasehold.OutcomeFailed} {
		h := c.claimID(c.d, rows[i].ID, "w", liveTTL, false)
		c.finish(fin(h, o))
		old = append(old, h)
	}
	if _, err := c.d.CancelJob(c.ctx, rows[2].ID); err != nil {
		c.Fatalf("CancelJob(pending): %v", err)
	}
	old = append(old, rows[2])
	var lastOld time.Time
	for _, j := range old {
		if f := c.get(j.ID).FinishedAt; f.After(lastOld) {
			lastOld = f
		}
	}
	const gap, margin = 400 * time.Millisecond, 100 * time.Millisecond
	c.waitPast(lastOld.Add(gap))
	recent := c.claimID(c.d, rows[3].ID, "w", liveTTL, false)
	c.finish(fin(recent, leasehold.OutcomeCompleted))
	running := c.claimID(c.d, rows[4].ID, "w", liveTTL, false)
	keep := []int64{recent.ID, running.ID, rows[5].ID}

	if n := c.purge(time.Hour, 0); n != 0 {
		c.Errorf("Purge(OlderThan 1h) deleted %d jobs finished seconds ago, want 0", n)
	}
	// Cut off between the old jobs and the recent one.
	olderThan := func() time.Duration { return c.now().Sub(lastOld.Add(margin)) }
	if n := c.purge(olderThan(), 2); n != 2 {
		c.Errorf("Purge(Limit 2) over 3 old jobs deleted %d, want 2", n)
	}
	if n := c.purge(olderThan(), 2); n != 1 {
		c.Errorf("second Purge(Limit 2) deleted %d, want the last old job", n)
	}
	for _, j := range old {
		if _, err := c.d.GetJob(c.ctx, j.ID); !errors.Is(err, leasehold.ErrJobNotFound) {
			c.Errorf("GetJob of purged job %d: err %v, want ErrJobNotFound", j.ID, err)
		}
		as, err := c.d.ListAttempts(c.ctx, j.ID)
		if err == nil && len(as) != 0 {
			c.Errorf("purged job %d still has %d attempt rows", j.ID, len(as))
		} else if err != nil && !errors.Is(err, leasehold.ErrJobNotFound) {
			c.Errorf("ListAttempts of purged job %d: %v", j.ID, err)
		}
	}
	for _, id := range keep {
		c.get(id)
	}
	c.eq("attempt rows of the kept completed job", len(c.attempts(recent.ID)), 1)

	c.waitPast(c.get(recent.ID).FinishedAt)
	if n := c.purge(0, 0); n != 1 {
		c.Errorf("Purge(OlderThan 0, Limit 0) deleted %d, want the 1 terminal job left", n)
	}
	for _, id := range keep[1:] {
		if _, err := c.d.GetJob(c.ctx, id); err != nil {
			c.Errorf("Purge deleted non-terminal job %d: %v", id, err)
		}
	}
}

// testQueueStats checks the per-queue counts, OldestPending (only jobs
// whose run_at has passed, by the db clock) and live/expired lease counts,
// ordered by queue. Queue c has only a job scheduled later, so no
// OldestPending.
func testQueueStats(c *tc) {
	now := c.now()
	oldest := job("a", "k")
	oldest.RunAt = now.Add(-10 * time.Minute)
	future := job("a", "k")
	future.RunIn = time.Hour
	onlyFuture := job("c", "k")
	onlyFuture.RunIn = time.Hour
	rows := c.insert(job("b", "k"), oldest, job("a", "k"), future, job("a", "k"), job("a", "k"), job("a", "k"), onlyFuture)
	failed := c.claimID(c.d, rows[0].ID, "w", liveTTL, false)
	c.finish(fin(failed, leasehold.OutcomeFailed))
	c.claimID(c.d, rows[4].ID, "w", liveTTL, false)
	expired := c.claimID(c.d, rows[5].ID, "w", shortTTL, false)
	done := c.claimID(c.d, rows[6].ID, "w", liveTTL, false)
	c.finish(fin(done, leasehold.OutcomeCompleted))
	c.waitExpired(expired)

	before := c.now()
	stats, err := c.d.QueueStats(c.ctx)
	after := c.now()
	if err != nil {
		c.Fatalf("QueueStats: %v", err)
	}
	if len(stats) != 3 || stats[0].Queue != "a" || stats[1].Queue != "b" || stats[2].Queue != "c" {
		var names []string
		for _, s := range stats {
			names = append(names, s.Queue)
		}
		c.Fatalf("QueueStats queues = %v, want [a b c]", names)
	}
	a, b := stats[0], stats[1]
	wantA := map[leasehold.JobState]int64{leasehold.StatePending: 3, leasehold.StateProcessing: 2, leasehold.StateCompleted: 1}
	wantB := map[leasehold.JobState]int64{leasehold.StateFailed: 1}
	for _, st := range leasehold.AllStates {
		c.eq(fmt.Sprintf("queue a Counts[%s]", st), a.Counts[st], wantA[st])
		c.eq(fmt.Sprintf("queue b Counts[%s]", st), b.Counts[st], wantB[st])
	}
	c.eq("queue a LiveLeases", a.LiveLeases, int64(1))
	c.eq("queue a ExpiredLeases", a.ExpiredLeases, int64(1))
	lo, hi := before.Sub(oldest.RunAt), after.Sub(oldest.RunAt)
	if a.OldestPending < lo-slack || a.OldestPending > hi+slack {
		c.Errorf("queue a OldestPending = %v, want within [%v, %v] (db now - run_at of the oldest due job)", a.OldestPending, lo, hi)
	}
	for _, s := range stats[1:] {
		if s.OldestPending != 0 || s.LiveLeases != 0 || s.ExpiredLeases != 0 {
			c.Errorf("queue %s OldestPending %v LiveLeases %d ExpiredLeases %d, want 0 0 0 (no due pending job, no lease)",
				s.Queue, s.OldestPending, s.LiveLeases, s.ExpiredLeases)
		}
	}
	c.eq("queue c Counts[pending]", stats[2].Counts[leasehold.StatePending], int64(1))
}
