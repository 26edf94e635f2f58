package hosts

import (
	"fmt"
	"image/color"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/bench"
)

// WriteChart draws the drain throughput of r against the number of worker
// processes, with the bare-SQL ceiling of the same server as a dashed
// line and linear scaling from the first step (per process) as a dotted
// one, as a PNG at path.
func WriteChart(path string, r *Report) error {
	if len(r.Steps) == 0 {
		return fmt.Errorf("hosts: chart: the run has no steps")
	}
	p := bench.NewRatePlot(fmt.Sprintf("%d no-op jobs, processes on %d namespaces: %s, %d CPUs",
		r.Jobs, len(r.Hosts), r.Server, r.CPUs), fmt.Sprintf("worker processes (%d slots each)", r.Concurrency))

	pts := make(plotter.XYs, len(r.Steps))
	ticks := make([]plot.Tick, len(r.Steps))
	top := 0.0
	for i, s := range r.Steps {
		pts[i] = plotter.XY{X: float64(s.Procs), Y: s.JobsPerSec}
		ticks[i] = plot.Tick{Value: float64(s.Procs), Label: strconv.Itoa(s.Procs)}
		top = max(top, s.JobsPerSec, s.Ceiling)
	}
	p.X.Tick.Marker = plot.ConstantTicks(ticks)
	lo, hi := minX(pts), maxX(pts)
	p.X.Min, p.X.Max = lo/1.3, hi*1.3
	line, points, err := plotter.NewLinePoints(pts)
	if err != nil {
		return fmt.Errorf("hosts: chart: %w", err)
	}
	line.Color, line.Width = color.RGBA{B: 200, A: 255}, vg.Points(2)
	points.Shape, points.Color = draw.CircleGlyph{}, line.Color
	p.Add(line, points)
	p.Legend.Add("leasehold work processes (heartbeats, fencing, history on)", line, points)

	first := r.Steps[0]
	perProc := first.JobsPerSec / float64(first.Procs)
	linear := make(plotter.XYs, len(pts)) // drawn up to the top of the chart
	for i, pt := range pts {
		linear[i] = plotter.XY{X: pt.X, Y: perProc * pt.X}
	}
	if err := addLine(p, linear, color.Gray{Y: 140}, []vg.Length{vg.Points(2), vg.Points(3)}, "linear from the first step"); err != nil {
		return err
	}
	if r.Steps[0].Ceiling > 0 {
		ceil := make(plotter.XYs, len(r.Steps))
		for i, s := range r.Steps {
			ceil[i] = plotter.XY{X: float64(s.Procs), Y: s.Ceiling}
		}
		name := fmt.Sprintf("bare-SQL ceiling (%d loops x %d), measured around each step", r.CeilingLoops, r.CeilingBatch)
		if err := addLine(p, ceil, color.RGBA{R: 200, A: 255}, []vg.Length{vg.Points(6), vg.Points(4)}, name); err != nil {
			return err
		}
	}
	p.Y.Max = top * 1.5 // room for the legend
	if err := p.Save(6*vg.Inch, 3.5*vg.Inch, path); err != nil {
		return fmt.Errorf("hosts: chart: %w", err)
	}
	return nil
}

func addLine(p *plot.Plot, pts plotter.XYs, c color.Color, dashes []vg.Length, name string) error {
	l, err := plotter.NewLine(pts)
	if err != nil {
		return fmt.Errorf("hosts: chart: %w", err)
	}
	l.Color, l.Width, l.Dashes = c, vg.Points(1.5), dashes
	p.Add(l)
	p.Legend.Add(name, l)
	return nil
}

func minX(pts plotter.XYs) float64 {
	v := pts[0].X
	for _, pt := range pts {
		v = min(v, pt.X)
	}
	return v
}

func maxX(pts plotter.XYs) float64 {
	v := pts[0].X
	for _, pt := range pts {
		v = max(v, pt.X)
	}
	return v
}
