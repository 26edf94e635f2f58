package bench

import (
	"context"
	"fmt"
	"time"
)

// SustainedResult is a sustained run: jobs inserted at a fixed rate and
// drained by a worker with default settings and retention on, in windows.
type SustainedResult struct {
	Rate      int     `json:"rate"`
	Seconds   float64 `json:"seconds"`
	Window    float64 `json:"window_s"`
	Retention string  `json:"retention"`
	Workers   int     `json:"workers"`
	Inserted  int64   `json:"inserted"`
	Completed int64   `json:"completed"`
	// Autovacuum holds the server's autovacuum settings during the run.
	Autovacuum map[string]string `json:"autovacuum"`
	// StorageParams are the reloptions of the jobs and attempts tables.
	StorageParams map[string]string `json:"storage_params"`
	Windows       []SustainedWindow `json:"windows"`
	Hold          *HeldTransaction  `json:"held_transaction,omitempty"`
	// Spans summarize stretches of windows, and Ratios compare them.
	Spans  []SustainedSpan  `json:"spans"`
	Ratios []SustainedRatio `json:"ratios"`
}

// SustainedSpan summarizes the windows from From to To seconds.
type SustainedSpan struct {
	Name       string    `json:"name"`
	From       float64   `json:"from_s"`
	To         float64   `json:"to_s"`
	JobsPerSec float64   `json:"jobs_per_sec"`
	Latency    Quantiles `json:"claim_latency_ms"`
	// WorstP99 is the highest p99 of one window of the span.
	WorstP99 float64 `json:"worst_window_p99_ms"`
	HeapMiB  float64 `json:"heap_mib"`
	RSSMiB   float64 `json:"rss_mib"`
}

// SustainedRatio is one span's figures over another's.
type SustainedRatio struct {
	Name       string  `json:"name"`
	JobsPerSec float64 `json:"jobs_per_sec"`
	P50        float64 `json:"p50"`
	P99        float64 `json:"p99"`
	// WorstP99 is the worst window p99 of the span over the other span's
	// p99.
	WorstP99 float64 `json:"worst_window_p99"`
	Heap     float64 `json:"heap"`
	RSS      float64 `json:"rss"`
}

// Span names.
const (
	SpanFirstMinute = "first minute"
	SpanLastMinute  = "last minute"
	SpanBeforeHold  = "before the held transaction"
	SpanDuringHold  = "during the held transaction"
	SpanHoldLast    = "last minute of the held transaction"
	SpanAfterHold   = "after the held transaction"
)

// summarize computes the spans and their ratios from the windows.
func (r *sustainRun) summarize(res *SustainedResult, o Options) {
	end := o.SustainFor
	first, last := min(sustainSpanOf, end), max(end-sustainSpanOf, 0)
	res.Spans = []SustainedSpan{r.span(res, SpanFirstMinute, 0, first), r.span(res, SpanLastMinute, last, end)}
	res.Ratios = []SustainedRatio{ratio("last minute / first minute", res.Spans[1], res.Spans[0])}
	if o.HoldFor <= 0 {
		return
	}
	at, until := o.HoldAt, o.HoldAt+o.HoldFor
	before := r.span(res, SpanBeforeHold, max(at-o.HoldFor, 0), at)
	during := r.span(res, SpanDuringHold, at, until)
	lastHeld := r.span(res, SpanHoldLast, max(until-sustainSpanOf, at), until)
	res.Spans = append(res.Spans, before, during, lastHeld, r.span(res, SpanAfterHold, until, end))
	res.Ratios = append(res.Ratios, ratio("during / before the held transaction", during, before),
		ratio("its last minute / before", lastHeld, before))
}

// span summarizes the windows that lie within [from, to).
func (r *sustainRun) span(res *SustainedResult, name string, from, to time.Duration) SustainedSpan {
	sp := SustainedSpan{Name: name, From: from.Seconds(), To: to.Seconds()}
	var (
		h         [histBuckets]int64
		completed int64
		n         int
		maxNanos  int64
	)
	for i, w := range res.Windows {
		start := time.Duration(i) * r.window
		if start < from || start+r.window > to {
			continue
		}
		n++
		completed += w.Completed
		sp.HeapMiB += w.HeapMiB
		sp.RSSMiB += w.RSSMiB
		sp.WorstP99 = max(sp.WorstP99, w.Latency.P99)
		for b := range h {
			h[b] += int64(r.windows[i].hist[b].Load())
		}
		maxNanos = max(maxNanos, r.windows[i].maxNanos.Load())
	}
	if n == 0 {
		return sp
	}
	sp.JobsPerSec = float64(completed) / (float64(n) * r.window.Seconds())
	sp.HeapMiB /= float64(n)
	sp.RSSMiB /= float64(n)
	sp.Latency = histQuantiles(h[:])
	sp.Latency.Max = float64(maxNanos) / 1e6
	return sp
}

// ratio returns a's figures over b's.
func ratio(name string, a, b SustainedSpan) SustainedRatio {
	div := func(x, y float64) float64 {
		if y == 0 {
			return 0
		}
		return x / y
	}
	return SustainedRatio{Name: name, JobsPerSec: div(a.JobsPerSec, b.JobsPerSec), P50: div(a.Latency.P50, b.Latency.P50),
		P99: div(a.Latency.P99, b.Latency.P99), WorstP99: div(a.WorstP99, b.Latency.P99),
		Heap: div(a.HeapMiB, b.HeapMiB), RSS: div(a.RSSMiB, b.RSSMiB)}
}

// readAutovacuum records the server's autovacuum settings and the
// tables' storage parameters.
func readAutovacuum(ctx context.Context, s *scratch, res *SustainedResult) error {
	res.Autovacuum, res.StorageParams = map[string]string{}, map[string]string{}
	rows, err := s.pool.Query(ctx, `SELECT name, setting || coalesce(unit, '') FROM pg_settings
		WHERE name LIKE 'autovacuum%' OR name IN ('vacuum_cost_limit', 'vacuum_cost_delay', 'fsync')
		UNION ALL
		SELECT c.relname, coalesce(array_to_string(c.reloptions, ','), '')
		FROM pg_class c WHERE c.oid IN ('leasehold_jobs'::regclass, 'leasehold_attempts'::regclass)`)
	if err != nil {
		return fmt.Errorf("autovacuum settings: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var k, v string
		if err := rows.Scan(&k, &v); err != nil {
			return fmt.Errorf("autovacuum settings: %w", err)
		}
		if k == "leasehold_jobs" || k == "leasehold_attempts" {
			res.StorageParams[k] = v
		} else {
			res.Autovacuum[k] = v
		}
	}
	return rows.Err()
}
