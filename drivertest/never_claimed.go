package drivertest

import (
	"errors"
	"fmt"
	"time"

	"github.com/leasehold/leasehold"
)

// testQueueStatsNeverClaimed checks QueueStats.NeverClaimed: per kind, the
// due pending jobs no worker ever claimed (attempt 0), the age of the
// oldest, and the kind's live leases. Jobs not yet due, jobs claimed once
// and released, and expired leases are not counted.
func testQueueStatsNeverClaimed(c *tc) {
	now := c.now()
	old := job("a", "orphan")
	old.RunAt = now.Add(-10 * time.Minute)
	later := job("a", "later")
	later.RunIn = time.Hour
	rows := c.insert(old, job("a", "orphan"), job("a", "busy"), job("a", "busy"), later,
		job("a", "released"), job("a", "orphan"), job("b", "k"))
	c.claimID(c.d, rows[3].ID, "w", liveTTL, false)
	released := c.claimID(c.d, rows[5].ID, "w", liveTTL, false)
	c.finish(fin(released, leasehold.OutcomeReleased))
	expired := c.claimID(c.d, rows[6].ID, "w", shortTTL, false)
	c.claimID(c.d, rows[7].ID, "w", liveTTL, false)
	c.waitExpired(expired)

	before := c.now()
	stats, err := c.d.QueueStats(c.ctx)
	after := c.now()
	if err != nil {
		c.Fatalf("QueueStats: %v", err)
	}
	if len(stats) != 2 || stats[0].Queue != "a" || stats[1].Queue != "b" {
		c.Fatalf("QueueStats returned %d queues, want a and b", len(stats))
	}
	if n := len(stats[1].NeverClaimed); n != 0 {
		c.Errorf("queue b NeverClaimed has %d kinds, want none (its only job is claimed)", n)
	}
	got := stats[0].NeverClaimed
	if len(got) != 2 {
		var kinds []string
		for _, b := range got {
			kinds = append(kinds, fmt.Sprintf("%+v", *b))
		}
		c.Fatalf("queue a NeverClaimed = %v, want busy and orphan", kinds)
	}
	busy, orphan := got[0], got[1]
	c.eq("NeverClaimed[0].Kind", busy.Kind, "busy")
	c.eq("busy Due", busy.Due, int64(1))
	c.eq("busy LiveLeases", busy.LiveLeases, int64(1))
	c.eq("NeverClaimed[1].Kind", orphan.Kind, "orphan")
	c.eq("orphan Due", orphan.Due, int64(2))
	c.eq("orphan LiveLeases (its lease expired)", orphan.LiveLeases, int64(0))
	lo, hi := before.Sub(old.RunAt), after.Sub(old.RunAt)
	if orphan.OldestDue < lo-slack || orphan.OldestDue > hi+slack {
		c.Errorf("orphan OldestDue = %v, want %v..%v", orphan.OldestDue, lo, hi)
	}
}

// testOperatorErrorText checks that the Client's operator errors name the
// library, the operation and the job once: the driver does not repeat the
// context the Client adds.
func testOperatorErrorText(c *tc) {
	cl, err := leasehold.NewClient(leasehold.Config{Driver: c.d})
	if err != nil {
		c.Fatalf("NewClient: %v", err)
	}
	rows := c.insert(job("q", "k"), job("q", "k"))
	running := c.claimID(c.d, rows[0].ID, "w", liveTTL, false)
	done := c.claimID(c.d, rows[1].ID, "w", liveTTL, false)
	c.finish(fin(done, leasehold.OutcomeCompleted))
	missing := rows[1].ID + 1000
	_, getErr := cl.GetJob(c.ctx, missing)
	_, retryMissing := cl.RetryJob(c.ctx, missing)
	_, cancelMissing := cl.CancelJob(c.ctx, missing)
	_, retryRunning := cl.RetryJob(c.ctx, running.ID)
	_, cancelDone := cl.CancelJob(c.ctx, done.ID)
	cases := []struct {
		err      error
		sentinel error
		want     string
	}{
		{getErr, leasehold.ErrJobNotFound, fmt.Sprintf("leasehold: get job %d: job not found", missing)},
		{retryMissing, leasehold.ErrJobNotFound, fmt.Sprintf("leasehold: retry job %d: job not found", missing)},
		{cancelMissing, leasehold.ErrJobNotFound, fmt.Sprintf("leasehold: cancel job %d: job not found", missing)},
		{retryRunning, leasehold.ErrJobRunning, fmt.Sprintf("leasehold: retry job %d: job is processing", running.ID)},
		{cancelDone, leasehold.ErrJobFinished, fmt.Sprintf("leasehold: cancel job %d: job already finished", done.ID)},
	}
	for _, tcase := range cases {
		if !errors.Is(tcase.err, tcase.sentinel) {
			c.Errorf("error %v does not match %v", tcase.err, tcase.sentinel)
			continue
		}
		if tcase.err.Error() != tcase.want {
			c.Errorf("error text %q, want %q", tcase.err.Error(), tcase.want)
		}
	}
}
