package web

import (
	"context"
	"time"

	"github.com/leasehold/leasehold"
)

// The last hour's chart: one bar per minute, finished jobs stacked by
// outcome, drawn from the newest finished jobs (chartSample at most).
const (
	chartSample  = 2000
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
	Completed, Failed, Max int
	// Sampled is set when the read was cut before reaching a job finished
	// before the hour: the earliest minutes may then count too few.
	Sampled bool
	Sample  int
	// Base is the y of the baseline, LabelY of the time labels.
	Base, LabelY float64
}

// chartBar is one minute.
type chartBar struct {
	X, W                float64
	OkY, OkH, FailY, Fh float64
	Minute              string
	Completed, Failed   int
}

// lastHour reads the newest finished jobs and draws the last hour.
func (h *handler) lastHour(ctx context.Context, now time.Time) (*chart, error) {
	rows, err := h.client.ListJobs(ctx, &leasehold.ListParams{
		States: []leasehold.JobState{leasehold.StateCompleted, leasehold.StateFailed}, Desc: true, Limit: chartSample,
	})
	if err != nil {
		return nil, err
	}
	return newChart(rows, now, len(rows) == chartSample), nil
}

// newChart buckets the jobs finished in the hour before now by minute;
// full says the read was cut at chartSample.
func newChart(rows []*leasehold.JobRow, now time.Time, full bool) *chart {
	ok, failed := make([]int, chartMinutes), make([]int, chartMinutes)
	c := &chart{Width: chartWidth, Height: chartHeight + chartTop + 14, Sample: chartSample,
		Base: chartTop + chartHeight, LabelY: chartTop + chartHeight + 12}
	reachedPast := false // a job read finished before the hour
	for _, j := range rows {
		age := now.Sub(j.FinishedAt)
		if age >= chartMinutes*time.Minute && !j.FinishedAt.IsZero() {
			reachedPast = true
		}
		if j.FinishedAt.IsZero() || age < 0 || age >= chartMinutes*time.Minute {
			continue
		}
		i := chartMinutes - 1 - int(age/time.Minute)
		if j.State == leasehold.StateFailed {
			failed[i]++
			c.Failed++
		} else {
			ok[i]++
			c.Completed++
		}
	}
	c.Sampled = full && !reachedPast
	for i := range chartMinutes {
		c.Max = max(c.Max, ok[i]+failed[i])
	}
	scale := float64(chartHeight) / float64(max(c.Max, 1))
	w := float64(chartWidth) / chartMinutes
	for i := range chartMinutes {
		b := chartBar{X: float64(i)*w + 1, W: w - 2, Completed: ok[i], Failed: failed[i],
			Minute: now.Add(-time.Duration(chartMinutes-1-i) * time.Minute).UTC().Format("15:04")}
		b.OkH, b.Fh = float64(ok[i])*scale, float64(failed[i])*scale
		b.OkY = chartTop + chartHeight - b.OkH
		b.FailY = b.OkY - b.Fh
		c.Bars = append(c.Bars, b)
	}
	return c
}
