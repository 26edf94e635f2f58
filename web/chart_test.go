package web

import (
	"testing"
	"time"

	"github.com/leasehold/leasehold"
)

// TestNewChart: jobs finished in the last hour land in their minute,
// stacked by outcome; older ones are left out; a cut read is flagged.
func TestNewChart(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 30, 0, time.UTC)
	fin := func(s leasehold.JobState, ago time.Duration) *leasehold.JobRow {
		return &leasehold.JobRow{State: s, FinishedAt: now.Add(-ago)}
	}
	rows := []*leasehold.JobRow{
		fin(leasehold.StateCompleted, 10*time.Second), fin(leasehold.StateFailed, 20*time.Second),
		fin(leasehold.StateCompleted, 5*time.Minute+time.Second), fin(leasehold.StateCompleted, 2*time.Hour),
		{State: leasehold.StateCompleted},
	}
	c := newChart(rows, now, false)
	last, five := c.Bars[59], c.Bars[54]
	if c.Completed != 2 || c.Failed != 1 || c.Max != 2 || c.Sampled || len(c.Bars) != chartMinutes {
		t.Errorf("chart = %+v", c)
	}
	if last.Completed != 1 || last.Failed != 1 || last.Minute != "12:00" || five.Completed != 1 || five.Minute != "11:55" {
		t.Errorf("last minute %+v, five minutes ago %+v", last, five)
	}
	if last.OkH != chartHeight/2 || last.FailY != float64(chartTop) || last.OkY+last.OkH != c.Base {
		t.Errorf("last bar geometry %+v (base %v)", last, c.Base)
	}
	if !newChart(rows[:3], now, true).Sampled {
		t.Errorf("a read cut within the hour is not flagged")
	}
	if newChart(rows[3:], now, true).Sampled {
		t.Errorf("a cut read reaching past the hour is flagged")
	}
}
