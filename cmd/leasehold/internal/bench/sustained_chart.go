package bench

import (
	"fmt"
	"image/color"
	"math"
	"os"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

// Colours of the sustained chart.
var (
	heldShade  = color.NRGBA{R: 255, G: 190, B: 100, A: 90}
	doneColour = color.RGBA{B: 200, A: 255}
	insColour  = color.RGBA{G: 140, A: 255}
	p99Colour  = color.RGBA{R: 200, A: 255}
	p95Colour  = color.RGBA{R: 230, G: 120, A: 255}
	p50Colour  = color.RGBA{R: 90, G: 90, B: 90, A: 255}
)

// WriteSustainedChart draws a sustained run as a PNG at path: the jobs
// completed and inserted per second over time above, and the claim
// latency's p99 and p50 per window below, with the held transaction's
// time shaded in both.
func WriteSustainedChart(path string, r *Report) error {
	s := r.Sustained
	if s == nil || len(s.Windows) == 0 {
		return fmt.Errorf("bench: sustained chart: the run has no sustained figures")
	}
	title := fmt.Sprintf("leasehold sustained: %d jobs/s, retention %s, %s", s.Rate, s.Retention, shortServer(r.Server))
	top, err := sustainedThroughput(s, title)
	if err != nil {
		return err
	}
	bottom, err := sustainedLatency(s)
	if err != nil {
		return err
	}
	img := vgimg.New(chartWidth, 2*chartHeight)
	dc := draw.New(img)
	tiles := draw.Tiles{Rows: 2, Cols: 1, PadTop: vg.Points(4), PadBottom: vg.Points(4),
		PadLeft: vg.Points(4), PadRight: vg.Points(8), PadY: vg.Points(12)}
	plots := [][]*plot.Plot{{top}, {bottom}}
	canvases := plot.Align(plots, tiles, dc)
	top.Draw(canvases[0][0])
	bottom.Draw(canvases[1][0])
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("bench: sustained chart: %w", err)
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		_ = f.Close()
		return fmt.Errorf("bench: sustained chart: %w", err)
	}
	return f.Close()
}

// sustainedThroughput is the upper panel.
func sustainedThroughput(s *SustainedResult, title string) (*plot.Plot, error) {
	p := newTimePlot(title, "jobs/s per window")
	done, ins := make(plotter.XYs, len(s.Windows)), make(plotter.XYs, len(s.Windows))
	top := 0.0
	for i, w := range s.Windows {
		done[i] = plotter.XY{X: w.End / 60, Y: float64(w.Completed) / s.Window}
		ins[i] = plotter.XY{X: w.End / 60, Y: float64(w.Inserted) / s.Window}
		top = max(top, done[i].Y, ins[i].Y)
	}
	p.Y.Min, p.Y.Max = 0, top*1.3
	if err := shadeHold(p, s, p.Y.Max); err != nil {
		return nil, err
	}
	if err := addSeries(p, ins, insColour, "inserted", 1); err != nil {
		return nil, err
	}
	if err := addSeries(p, done, doneColour, "completed", 2); err != nil {
		return nil, err
	}
	return p, nil
}

// sustainedLatency is the lower panel, on a logarithmic scale.
func sustainedLatency(s *SustainedResult) (*plot.Plot, error) {
	p := newTimePlot("claim latency per window (insert to handler start)", "ms (log scale)")
	series := []struct {
		name  string
		c     color.Color
		width float64
		of    func(Quantiles) float64
	}{
		{"p99", p99Colour, 2, func(q Quantiles) float64 { return q.P99 }},
		{"p95", p95Colour, 1, func(q Quantiles) float64 { return q.P95 }},
		{"p50", p50Colour, 1.5, func(q Quantiles) float64 { return q.P50 }},
	}
	pts := make([]plotter.XYs, len(series))
	lo, top := math.Inf(1), 0.0
	for k, se := range series {
		pts[k] = make(plotter.XYs, len(s.Windows))
		for i, w := range s.Windows {
			v := max(se.of(w.Latency), histMin)
			pts[k][i] = plotter.XY{X: w.End / 60, Y: v}
			lo, top = min(lo, v), max(top, v)
		}
	}
	p.Y.Scale, p.Y.Tick.Marker = plot.LogScale{}, plot.LogTicks{Prec: -1}
	p.Y.Min, p.Y.Max = lo/1.5, top*4
	if err := shadeHold(p, s, p.Y.Max); err != nil {
		return nil, err
	}
	for k, se := range series {
		if err := addSeries(p, pts[k], se.c, se.name, se.width); err != nil {
			return nil, err
		}
	}
	return p, nil
}

func newTimePlot(title, ylabel string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "minutes"
	p.Y.Label.Text = ylabel
	p.X.Min = 0
	p.Legend.Top = true
	p.Add(plotter.NewGrid())
	return p
}

// shadeHold shades the held transaction's time up to height.
func shadeHold(p *plot.Plot, s *SustainedResult, height float64) error {
	if s.Hold == nil {
		return nil
	}
	from, to := s.Hold.Opened/60, s.Hold.Closed/60
	low := p.Y.Min
	poly, err := plotter.NewPolygon(plotter.XYs{{X: from, Y: low}, {X: to, Y: low}, {X: to, Y: height}, {X: from, Y: height}})
	if err != nil {
		return fmt.Errorf("bench: sustained chart: %w", err)
	}
	poly.Color = heldShade
	poly.LineStyle.Width = 0
	poly.LineStyle.Color = color.Transparent
	p.Add(poly)
	p.Legend.Add("transaction held open", poly)
	return nil
}

func addSeries(p *plot.Plot, pts plotter.XYs, c color.Color, name string, width float64) error {
	l, err := plotter.NewLine(pts)
	if err != nil {
		return fmt.Errorf("bench: sustained chart: %w", err)
	}
	l.Color = c
	l.Width = vg.Points(width)
	p.Add(l)
	p.Legend.Add(name, l)
	return nil
}
