package web

import (
	"testing"
	"time"

	"github.com/leasehold/leasehold"
)

// TestNewChart: each minute's totals land in their bar, failures
// (failed, retried, expired) stacked on completions; minutes before the
// hour and other outcomes are left out.
func TestNewChart(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 30, 0, time.UTC)
	at := func(ago time.Duration, o leasehold.Outcome, n int64) *leasehold.ThroughputBucket {
		return &leasehold.ThroughputBucket{Minute: now.Truncate(time.Minute).Add(-ago),
			ThroughputCount: leasehold.ThroughputCount{Queue: "q", Outcome: o, Jobs: n}}
	}
	buckets := []*leasehold.ThroughputBucket{
		at(0, leasehold.OutcomeCompleted, 4), at(0, leasehold.OutcomeFailed, 1), at(0, leasehold.OutcomeRetried, 2),
		at(0, leasehold.OutcomeLeaseExpired, 1), at(0, leasehold.OutcomeSnoozed, 50),
		at(5*time.Minute, leasehold.OutcomeCompleted, 3), at(2*time.Hour, leasehold.OutcomeCompleted, 99),
	}
	c := newChart(buckets, now)
	last, five := c.Bars[59], c.Bars[54]
	if c.Completed != 7 || c.Failed != 4 || c.Max != 8 || len(c.Bars) != chartMinutes {
		t.Errorf("chart = %+v", c)
	}
	if last.Completed != 4 || last.Failed != 4 || last.Minute != "12:00" || five.Completed != 3 || five.Minute != "11:55" {
		t.Errorf("last minute %+v, five minutes ago %+v", last, five)
	}
	if last.OkH != chartHeight/2 || last.FailY != float64(chartTop) || last.OkY+last.OkH != c.Base {
		t.Errorf("last bar geometry %+v (base %v)", last, c.Base)
	}
}
