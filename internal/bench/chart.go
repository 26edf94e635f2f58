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
	p := plot.New()
	p.Title.Text = fmt.Sprintf("leasehold drain of %d no-op jobs: %s, %d CPUs", r.Jobs, shortServer(r.Server), r.Machine.CPUs)
	p.X.Label.Text = "workers (QueueConfig.MaxWorkers)"
	p.Y.Label.Text = "jobs/s"
	p.X.Scale = plot.LogScale{}
	p.Y.Min = 0
	p.Y.Tick.Marker = thousands{}
	p.Title.Padding = vg.Points(8)
	p.Legend.Top = true
	p.Legend.Left = true
	p.Add(plotter.NewGrid())

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
		if err := addLevel(p, pts, c.JobsPerSec, color.RGBA{R: 200, A: 255},
			fmt.Sprintf("bare-SQL ceiling (%d loops x %d)", c.Loops, c.Batch)); err != nil {
			return err
		}
		top = max(top, c.JobsPerSec)
	}
	p.Y.Max = top * 1.35 // room for the legend
	if err := p.Save(chartWidth, chartHeight, path); err != nil {
		return fmt.Errorf("bench: chart: %w", err)
	}
	return nil
}

// addLevel draws a dashed horizontal line at y across the x range of pts.
func addLevel(p *plot.Plot, pts plotter.XYs, y float64, c color.Color, name string) error {
	l, err := plotter.NewLine(plotter.XYs{{X: pts[0].X, Y: y}, {X: pts[len(pts)-1].X, Y: y}})
	if err != nil {
		return fmt.Errorf("bench: chart: %w", err)
	}
	l.Color = c
	l.Width = vg.Points(1.5)
	l.Dashes = []vg.Length{vg.Points(6), vg.Points(4)}
	p.Add(l)
	p.Legend.Add(name, l)
	return nil
}

// shortServer drops the build details of a server version string
// ("PostgreSQL 15.18 (Debian ...)" becomes "PostgreSQL 15.18").
func shortServer(s string) string {
	if i := strings.Index(s, " ("); i > 0 {
		return s[:i]
	}
	return s
}

// thousands labels the default ticks in thousands of jobs/s.
type thousands struct{}

// Ticks returns plot.DefaultTicks labelled as 5k, 12.5k...
func (thousands) Ticks(lo, hi float64) []plot.Tick {
	ts := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range ts {
		if ts[i].Label != "" {
			ts[i].Label = strconv.FormatFloat(ts[i].Value/1000, 'f', -1, 64) + "k"
		}
	}
	return ts
}
