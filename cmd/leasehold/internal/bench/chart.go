package bench

import (
	"fmt"
	"image/color"
	"strconv"
	"strings"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// Chart size.
const (
	chartWidth  = 6 * vg.Inch
	chartHeight = 3.5 * vg.Inch
)

// WriteChart draws the drain throughput of r against the worker count,
// with the bare-SQL ceiling of the same run, as a PNG at path.
func WriteChart(path string, r *Report) error {
	if len(r.Drain) == 0 {
		return fmt.Errorf("bench: chart: the run has no drain figures")
	}
	p := NewRatePlot(fmt.Sprintf("leasehold drain of %d no-op jobs: %s, %d CPUs", r.Jobs, shortServer(r.Server), r.Machine.CPUs),
		"workers (QueueConfig.MaxWorkers)")

	pts := make(plotter.XYs, len(r.Drain))
	ticks := make([]plot.Tick, len(r.Drain))
	top := 0.0
	for i, d := range r.Drain {
		pts[i] = plotter.XY{X: float64(d.Workers), Y: d.JobsPerSec}
		label := strconv.Itoa(d.Workers)
		if d.Default {
			label += " (default)"
		}
		ticks[i] = plot.Tick{Value: float64(d.Workers), Label: label}
		top = max(top, d.JobsPerSec)
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	p.X.Min, p.X.Max = pts[0].X/1.3, pts[len(pts)-1].X*1.3 // room for the end labels
	line, points, err := plotter.NewLinePoints(pts)
	if err != nil {
		return fmt.Errorf("bench: chart: %w", err)
	}
	line.Color = color.RGBA{B: 200, A: 255}
	line.Width = vg.Points(2)
	points.Shape = draw.CircleGlyph{}
	points.Color = line.Color
	p.Add(line, points)
	p.Legend.Add("leasehold (heartbeats, fencing, history on)", line, points)

	if c := r.Ceiling; c != nil {
		ceil, err := addCeiling(p, r, pts)
		if err != nil {
			return err
		}
		top = max(top, ceil)
	}
	p.Y.Max = top * 1.35 // room for the legend
	if err := p.Save(chartWidth, chartHeight, path); err != nil {
		return fmt.Errorf("bench: chart: %w", err)
	}
	return nil
}

// addCeiling draws the bare-SQL ceiling as a dashed line: through the
// ceiling measured around each drain when the run paired them, else level
// at the median. It returns the highest point drawn.
func addCeiling(p *plot.Plot, r *Report, drains plotter.XYs) (float64, error) {
	c := r.Ceiling
	pts := plotter.XYs{{X: drains[0].X, Y: c.JobsPerSec}, {X: drains[len(drains)-1].X, Y: c.JobsPerSec}}
	name := fmt.Sprintf("bare-SQL ceiling (%d loops x %d), median", c.Loops, c.Batch)
	if r.Drain[0].Ceiling > 0 {
		pts = make(plotter.XYs, len(r.Drain))
		for i, d := range r.Drain {
			pts[i] = plotter.XY{X: float64(d.Workers), Y: d.Ceiling}
		}
		name = fmt.Sprintf("bare-SQL ceiling (%d loops x %d), measured around each drain", c.Loops, c.Batch)
	}
	l, err := plotter.NewLine(pts)
	if err != nil {
		return 0, fmt.Errorf("bench: chart: %w", err)
	}
	l.Color = color.RGBA{R: 200, A: 255}
	l.Width = vg.Points(1.5)
	l.Dashes = []vg.Length{vg.Points(6), vg.Points(4)}
	p.Add(l)
	p.Legend.Add(name, l)
	top := 0.0
	for _, pt := range pts {
		top = max(top, pt.Y)
	}
	return top, nil
}

// shortServer drops the build details of a server version string
// ("PostgreSQL 15.18 (Debian ...)" becomes "PostgreSQL 15.18").
func shortServer(s string) string {
	if i := strings.Index(s, " ("); i > 0 {
		return s[:i]
	}
	return s
}

// NewRatePlot returns a plot of jobs/s (from 0, labelled in thousands)
// against a count on a log scale, with a grid and the legend at the top
// left: the style of the bench's charts.
func NewRatePlot(title, xLabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.Title.Padding = vg.Points(8)
	p.X.Label.Text = xLabel
	p.X.Scale = plot.LogScale{}
	p.Y.Label.Text = "jobs/s"
	p.Y.Min = 0
	p.Y.Tick.Marker = Thousands{}
	p.Legend.Top, p.Legend.Left = true, true
	p.Add(plotter.NewGrid())
	return p
}

// Thousands labels the default ticks in thousands (5k, 12.5k): a tick
// marker for rates in jobs/s.
type Thousands struct{}

// Ticks returns plot.DefaultTicks labelled as 5k, 12.5k...
func (Thousands) Ticks(lo, hi float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = strconv.FormatFloat(ts[i].Value/1000, 'f', -1, 64) + "k"
		}
	}
	return ts
}
