package drivertest

import (
	"errors"
	"slices"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// purgeQueues runs Purge of the jobs of queues finished before now.
func (c *tc) purgeQueues(queues []string, limit int) int64 {
	c.Helper()
	n, err := c.d.Purge(c.ctx, &driver.PurgeParams{Limit: limit, Queues: queues})
	if err != nil {
		c.Fatalf("Purge(Queues %q, Limit %d): %v", queues, limit, err)
	}
	return n
}

// testPurgeQueues checks that Purge with Queues deletes the finished jobs
// of those queues only, at most Limit per call across them, with their
// history, and never another queue's: a client's retention passes its own
// queues, and another service's finished jobs keep their unique keys.
// An empty, non-nil Queues deletes nothing.
func testPurgeQueues(c *tc) {
	finished := map[string][]int64{} // completed, failed and, in c, cancelled
	var pending []int64
	var last time.Time
	for _, q := range []string{"a", "b", "c"} {
		rows := c.insertN(3, q, "k")
		for i, o := range []leasehold.Outcome{leasehold.OutcomeCompleted, leasehold.OutcomeFailed} {
			h := c.claimID(c.d, rows[i].ID, "w", liveTTL, false)
			c.finish(fin(h, o))
			finished[q] = append(finished[q], h.ID)
		}
		pending = append(pending, rows[2].ID)
	}
	cancelled := c.insertN(1, "c", "k")[0]
	if _, err := c.d.CancelJob(c.ctx, cancelled.ID); err != nil {
		c.Fatalf("CancelJob(pending): %v", err)
	}
	finished["c"] = append(finished["c"], cancelled.ID)
	for _, ids := range finished {
		for _, id := range ids {
			if f := c.get(id).FinishedAt; f.After(last) {
				last = f
			}
		}
	}
	c.waitPast(last)

	mine := []string{"a", "c", "unknown"}
	left := int64(len(finished["a"]) + len(finished["c"]))
	for _, want := range []int64{3, left - 3, 0} {
		if n := c.purgeQueues(mine, 3); n != want {
			c.Errorf("Purge(Queues %q, Limit 3) with %d of their jobs finished = %d, want %d", mine, left, n, want)
		}
		left -= want
	}
	for q, ids := range finished {
		purged := slices.Contains(mine, q)
		for _, id := range ids {
			_, err := c.d.GetJob(c.ctx, id)
			switch {
			case purged && !errors.Is(err, leasehold.ErrJobNotFound):
				c.Errorf("finished job %d of queue %s after Purge of its queue: err %v, want ErrJobNotFound", id, q, err)
			case !purged && err != nil:
				c.Errorf("finished job %d of queue %s, not among the Queues purged: %v; want it kept", id, q, err)
			case !purged:
				c.eq("attempt rows of a kept finished job", len(c.attempts(id)), 1)
			}
		}
	}
	if n := c.purgeQueues([]string{}, 0); n != 0 {
		c.Errorf("Purge(Queues []) deleted %d jobs, want none", n)
	}
	if n := c.purgeQueues([]string{"b"}, 0); n != int64(len(finished["b"])) {
		c.Errorf("Purge(Queues [b]) = %d, want its %d finished jobs", n, len(finished["b"]))
	}
	for _, id := range pending {
		if j := c.get(id); j.State != leasehold.StatePending {
			c.Errorf("job %d after the purges: state %s, want pending, kept", id, j.State)
		}
	}
}
