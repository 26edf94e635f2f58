package drivertest

import (
	"time"

	"github.com/leasehold/leasehold"
)

// ancientAge is the least age QueueStats may report for a job due since
// year 1: past it a Duration built from microseconds wraps, and the age
// of such a job, over 2,000 years, is reported saturated.
const ancientAge = 290 * 365 * 24 * time.Hour

// testQueueStatsAncientRunAt: a job due since 0001-01-02, a RunAt the
// client accepts, is reported at least 290 years old (the ages saturate at
// the Duration's bound instead of wrapping) by QueueStats and
// ActiveQueueStats alike, as OldestPending and as its kind's OldestDue.
func testQueueStatsAncientRunAt(c *tc) {
	p := job("q", "k")
	p.RunAt = time.Date(1, 1, 2, 0, 0, 0, 0, time.UTC)
	c.insert(p)
	all, err := c.d.QueueStats(c.ctx)
	if err != nil {
		c.Fatalf("QueueStats: %v", err)
	}
	c.checkAncient("QueueStats", all)
	c.checkAncient("ActiveQueueStats", c.activeStats(100))
}

// checkAncient checks the ages of queue q in stats, read by the method of
// that name, against ancientAge.
func (c *tc) checkAncient(method string, stats []*leasehold.QueueStats) {
	c.Helper()
	q := statsOf(stats, "q")
	if q == nil {
		c.Fatalf("%s: queue q missing", method)
	}
	if q.OldestPending < ancientAge {
		c.Errorf("%s: OldestPending = %v for a job due since 0001-01-02, want at least %v", method, q.OldestPending, ancientAge)
	}
	if len(q.NeverClaimed) != 1 {
		c.Fatalf("%s: NeverClaimed has %d kinds, want k", method, len(q.NeverClaimed))
	}
	if b := q.NeverClaimed[0]; b.OldestDue < ancientAge {
		c.Errorf("%s: kind %s OldestDue = %v for a job due since 0001-01-02, want at least %v", method, b.Kind, b.OldestDue, ancientAge)
	}
}
