package drivertest

import (
	"fmt"
	"slices"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// testActiveQueueStats: ActiveQueueStats agrees with QueueStats on every
// unfinished state of every queue with unfinished jobs (pending over two
// priorities, processing live and expired, stuck), on the oldest due job
// (of neither the first priority nor the last inserted), the leases and NeverClaimed; it counts no finished
// job, leaves out a queue with only finished jobs, reports a paused queue
// with no jobs, and estimates nothing under its count limit.
func testActiveQueueStats(c *tc) {
	now := c.now()
	oldest, low := job("a", "k"), job("a", "k")
	oldest.RunAt = now.Add(-10 * time.Minute)
	low.Priority, low.RunAt = 5, now.Add(-5*time.Minute)
	rows := c.insert(job("a", "k"), oldest, job("a", "orphan"), job("a", "k"), job("a", "k"), job("done", "k"), low)
	c.claimID(c.d, rows[3].ID, "w", liveTTL, false)
	expired := c.claimID(c.d, rows[4].ID, "w", shortTTL, false)
	c.finish(fin(c.claimID(c.d, rows[5].ID, "w", liveTTL, false), leasehold.OutcomeCompleted))
	c.heartbeatedIn(leasehold.StateStuck)
	c.heartbeatedIn(leasehold.StateFailed)
	c.waitExpired(expired)
	c.pause("empty-paused")

	t0 := c.now()
	active := c.activeStats(0)
	full := c.pausedStats()
	apart := c.now().Sub(t0) + slack // the ages are read this far apart
	c.eq("queues of ActiveQueueStats", queueNames(active), []string{"a", "empty-paused", "flagq"})
	for _, got := range active {
		want := statsOf(full, got.Queue)
		if want == nil {
			c.Fatalf("QueueStats has no queue %s", got.Queue)
		}
		for _, s := range leasehold.AllStates {
			n := want.Counts[s]
			if s.Finished() {
				n = 0
			}
			c.eq(fmt.Sprintf("queue %s Counts[%s]", got.Queue, s), got.Counts[s], n)
		}
		c.eq("queue "+got.Queue+" LiveLeases", got.LiveLeases, want.LiveLeases)
		c.eq("queue "+got.Queue+" ExpiredLeases", got.ExpiredLeases, want.ExpiredLeases)
		c.eq("queue "+got.Queue+" Paused", got.Paused, want.Paused)
		c.eq("queue "+got.Queue+" Estimated", len(got.Estimated), 0)
		c.eq("queue "+got.Queue+" NeverClaimed", backlogs(got.NeverClaimed), backlogs(want.NeverClaimed))
		if d := got.OldestPending - want.OldestPending; d < -apart || d > apart {
			c.Errorf("queue %s OldestPending = %v, QueueStats says %v", got.Queue, got.OldestPending, want.OldestPending)
		}
	}
	if a := active[0]; a.OldestPending < 10*time.Minute-slack {
		c.Errorf("queue a OldestPending = %v, want its oldest job's, due 10 minutes ago", a.OldestPending)
	}
}

// testActiveQueueStatsLimit: beyond the count limit a state's count is
// never below the limit, and is exact or listed in Estimated; NeverClaimed
// counts only the first due jobs in claim order, up to the limit.
func testActiveQueueStatsLimit(c *tc) {
	head := make([]*driver.InsertParams, 0, 8)
	for range 5 {
		head = append(head, job("big", "first"))
	}
	for range 3 {
		head = append(head, job("big", "later"))
	}
	c.insert(head...)
	stats := c.activeStats(2)
	c.eq("queues", queueNames(stats), []string{"big"})
	big := stats[0]
	n := big.Counts[leasehold.StatePending]
	estimated := slices.Contains(big.Estimated, leasehold.StatePending)
	if n < 2 || (!estimated && n != 8) {
		c.Errorf("pending = %d (estimated %v) with CountLimit 2 over 8 jobs: want 8 exactly, or at least 2 estimated", n, estimated)
	}
	c.eq("NeverClaimed with CountLimit 2", backlogs(big.NeverClaimed), []string{"first:2"})
}

// activeStats calls ActiveQueueStats, failing the test on an error.
func (c *tc) activeStats(limit int) []*leasehold.QueueStats {
	c.Helper()
	stats, err := c.d.ActiveQueueStats(c.ctx, &driver.ActiveStatsParams{CountLimit: limit})
	if err != nil {
		c.Fatalf("ActiveQueueStats: %v", err)
	}
	return stats
}

// statsOf returns the stats of queue in stats, nil when absent.
func statsOf(stats []*leasehold.QueueStats, queue string) *leasehold.QueueStats {
	for _, s := range stats {
		if s.Queue == queue {
			return s
		}
	}
	return nil
}

// backlogs renders NeverClaimed as kind:due:live entries, for comparing.
func backlogs(bs []*leasehold.KindBacklog) []string {
	out := []string{}
	for _, b := range bs {
		s := fmt.Sprintf("%s:%d", b.Kind, b.Due)
		if b.LiveLeases > 0 {
			s += fmt.Sprintf(":%d live", b.LiveLeases)
		}
		out = append(out, s)
	}
	return out
}

// testThroughput: RecordThroughput adds to the current minute's totals,
// per queue and outcome, summing repeated entries of one call; Throughput
// returns them for a window that holds the minute, by the database clock.
func testThroughput(c *tc) {
	record := func(counts ...leasehold.ThroughputCount) {
		c.Helper()
		if err := c.d.RecordThroughput(c.ctx, &driver.ThroughputParams{Counts: counts, Keep: 24 * time.Hour}); err != nil {
			c.Fatalf("RecordThroughput: %v", err)
		}
	}
	tc := func(q string, o leasehold.Outcome, n int64) leasehold.ThroughputCount {
		return leasehold.ThroughputCount{Queue: q, Outcome: o, Jobs: n}
	}
	before := c.now()
	record(tc("a", leasehold.OutcomeCompleted, 3), tc("a", leasehold.OutcomeFailed, 1), tc("a", leasehold.OutcomeCompleted, 2))
	record(tc("a", leasehold.OutcomeCompleted, 4), tc("b", leasehold.OutcomeRetried, 7))
	record()
	after := c.now()
	got, err := c.d.Throughput(c.ctx, time.Hour)
	if err != nil {
		c.Fatalf("Throughput: %v", err)
	}
	totals := map[string]int64{}
	for _, b := range got {
		if b.Minute.After(after) || b.Minute.Before(before.Truncate(time.Minute)) || b.Minute.Second() != 0 {
			c.Errorf("bucket minute %v outside %v..%v or not a whole minute", b.Minute, before, after)
		}
		totals[fmt.Sprintf("%s/%s", b.Queue, b.Outcome)] += b.Jobs
	}
	c.eq("throughput totals", totals, map[string]int64{"a/completed": 9, "a/failed": 1, "b/retried": 7})
	if n := len(got); n < 3 || n > 6 { // the calls may straddle a minute
		c.Errorf("Throughput returned %d buckets, want 3 (6 across a minute boundary)", n)
	}
}

// testListByFinish: ListJobs with ByFinish returns finished jobs only, by
// finish time then id, newest first with Desc, and pages through them
// with the (FinishedAt, id) keyset in both directions.
func testListByFinish(c *tc) {
	rows := c.insert(job("q", "k"), job("q", "k"), job("q", "k"), job("q", "k"))
	order := []int{2, 0, 3} // finished in this order; rows[1] stays pending
	var done []*leasehold.JobRow
	for _, i := range order {
		c.finish(fin(c.claimID(c.d, rows[i].ID, "w", liveTTL, false), leasehold.OutcomeCompleted))
		done = append(done, c.get(rows[i].ID))
		c.waitPast(done[len(done)-1].FinishedAt)
	}
	list := func(p *leasehold.ListParams) []int64 {
		c.Helper()
		p.ByFinish = true
		got, err := c.d.ListJobs(c.ctx, p)
		if err != nil {
			c.Fatalf("ListJobs(%+v): %v", p, err)
		}
		return rawIDs(got)
	}
	c.eq("ByFinish", list(&leasehold.ListParams{}), []int64{done[0].ID, done[1].ID, done[2].ID})
	c.eq("ByFinish Desc", list(&leasehold.ListParams{Desc: true}), []int64{done[2].ID, done[1].ID, done[0].ID})
	c.eq("ByFinish Desc after the newest", list(&leasehold.ListParams{Desc: true, FinishedAt: done[2].FinishedAt, BeforeID: done[2].ID}),
		[]int64{done[1].ID, done[0].ID})
	c.eq("ByFinish after the oldest", list(&leasehold.ListParams{FinishedAt: done[0].FinishedAt, AfterID: done[0].ID, Limit: 1}),
		[]int64{done[1].ID})
	c.eq("ByFinish of failed jobs", list(&leasehold.ListParams{States: []leasehold.JobState{leasehold.StateFailed}}), []int64{})
}
