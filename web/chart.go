package web

import (
	"context"
	"slices"
	"time"

	"github.com/leasehold/leasehold"
)

// The last hour's chart: one bar per minute, attempts ended stacked by
// outcome, from the per-minute totals every client records
// (Client.Throughput): at most an hour of rows, whatever the table holds.
const (
	chartMinutes = 60
	chartWidth   = 900
	chartHeight  = 120
	chartTop     = 14
)

// chart is the overview's throughput and failures over the last hour.
type chart struct {
	Width, Height int
	Bars          []chartBar
	// Completed and Failed total the hour; Max is the tallest minute.
	Completed, Failed, Max int64
	// Base is the y of the baseline, LabelY of the time labels.
	Base, LabelY float64
}

// chartBar is one minute.
type chartBar struct {
	X, W                float64
	OkY, OkH, FailY, Fh float64
	Minute              string
	Completed, Failed   int64
}

// failedOutcome reports whether an attempt that ended with o counts as a
// failure in the chart: it failed, will be retried, or its lease expired.
func failedOutcome(o leasehold.Outcome) bool {
	return o == leasehold.OutcomeFailed || o == leasehold.OutcomeRetried || o == leasehold.OutcomeLeaseExpired
}

// lastHour reads the last hour's totals and the database clock they are
// measured by: the chartMinutes minutes up to now's, the current one
// included. Client.Throughput also returns the minute that began an hour
// before now, a 61st; it is left out here, once, so that the chart and
// the overview's hour columns count the same minutes.
func (h *handler) lastHour(ctx context.Context) ([]*leasehold.ThroughputBucket, time.Time, error) {
	buckets, err := h.client.Throughput(ctx, chartMinutes*time.Minute)
	if err != nil {
		return nil, time.Time{}, err
	}
	now, err := h.now(ctx)
	if err != nil {
		return nil, time.Time{}, err
	}
	return slices.DeleteFunc(buckets, func(b *leasehold.ThroughputBucket) bool {
		age := minuteAge(b.Minute, now)
		return age < 0 || age >= chartMinutes
	}), now, nil
}

// minuteAge is the number of whole minutes between the minute of t and
// that of now: 0 for the current minute.
func minuteAge(t, now time.Time) int {
	return int(now.Truncate(time.Minute).Sub(t.Truncate(time.Minute)) / time.Minute)
}

// newChart draws the completed and failed attempts of buckets per minute
// of the hour before now (by the database clock); other outcomes
// (snoozed, released, cancelled) are left out.
func newChart(buckets []*leasehold.ThroughputBucket, now time.Time) *chart {
	ok, failed := make([]int64, chartMinutes), make([]int64, chartMinutes)
	c := &chart{Width: chartWidth, Height: chartHeight + chartTop + 14,
		Base: chartTop + chartHeight, LabelY: chartTop + chartHeight + 12}
	thisMinute := now.Truncate(time.Minute)
	for _, b := range buckets {
		age := minuteAge(b.Minute, now)
		if age < 0 || age >= chartMinutes {
			continue
		}
		i := chartMinutes - 1 - age
		switch {
		case b.Outcome == leasehold.OutcomeCompleted:
			ok[i] += b.Jobs
			c.Completed += b.Jobs
		case failedOutcome(b.Outcome):
			failed[i] += b.Jobs
			c.Failed += b.Jobs
		}
	}
	for i := range chartMinutes {
		c.Max = max(c.Max, ok[i]+failed[i])
	}
	scale := float64(chartHeight) / float64(max(c.Max, 1))
	w := float64(chartWidth) / chartMinutes
	for i := range chartMinutes {
		b := chartBar{X: float64(i)*w + 1, W: w - 2, Completed: ok[i], Failed: failed[i],
			Minute: thisMinute.Add(-time.Duration(chartMinutes-1-i) * time.Minute).UTC().Format("15:04")}
		b.OkH, b.Fh = float64(ok[i])*scale, float64(failed[i])*scale
		b.OkY = chartTop + chartHeight - b.OkH
		b.FailY = b.OkY - b.Fh
		c.Bars = append(c.Bars, b)
	}
	return c
}
