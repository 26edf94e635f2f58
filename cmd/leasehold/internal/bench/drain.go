package bench

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// noopArgs is the kind of the drained jobs: a handler that does nothing.
type noopArgs struct{}

// Kind names the no-op job kind.
func (noopArgs) Kind() string { return "bench.noop" }

// InsertResult is the bulk insert measurement.
type InsertResult struct {
	Jobs       int     `json:"jobs"`
	Chunk      int     `json:"chunk"`
	Seconds    float64 `json:"seconds"`
	JobsPerSec float64 `json:"jobs_per_sec"`
}

// DrainResult is one drain: Jobs no-op jobs inserted first, then completed
// by a client with Workers worker slots and every other setting at its
// default.
type DrainResult struct {
	Workers    int     `json:"workers"`
	Default    bool    `json:"default"` // Workers is leasehold.DefaultMaxWorkers
	Jobs       int     `json:"jobs"`
	Seconds    float64 `json:"seconds"`
	JobsPerSec float64 `json:"jobs_per_sec"`
	// Ceiling is the mean of the bare-SQL ceilings measured just before
	// and just after this drain; CeilingRatio is JobsPerSec over it.
	Ceiling      float64 `json:"ceiling,omitempty"`
	CeilingRatio float64 `json:"ceiling_ratio,omitempty"`
	// BestRatio is JobsPerSec over the fastest ceiling of the whole run:
	// the most pessimistic comparison.
	BestRatio float64 `json:"best_ratio,omitempty"`
	// Cost is the client's own cost per job during the drain.
	Cost  Cost  `json:"client_cost"`
	Calls Calls `json:"driver_calls"`
	// Statements counts database statements (see Report.StatementSource).
	Statements       int64       `json:"statements"`
	StatementsPerJob float64     `json:"statements_per_job"`
	Top              []Statement `json:"top_statements,omitempty"`
}

// Calls counts driver calls by method.
type Calls struct {
	Claim     int64 `json:"claim"`
	Finish    int64 `json:"finish"`
	Heartbeat int64 `json:"heartbeat"`
	Insert    int64 `json:"insert"`
	Rescue    int64 `json:"rescue"`
	Other     int64 `json:"other"`
}

func (n *callCounts) snapshot() Calls {
	return Calls{Claim: n.claim.Load(), Finish: n.finish.Load(), Heartbeat: n.heartbeat.Load(),
		Insert: n.insert.Load(), Rescue: n.rescue.Load(), Other: n.other.Load()}
}

// insertJobs bulk-inserts n no-op jobs in chunks and returns the time taken.
func insertJobs(ctx context.Context, drv driver.Driver, n int) (time.Duration, error) {
	c, err := leasehold.NewClient(leasehold.Config{Driver: drv})
	if err != nil {
		return 0, err
	}
	chunk := make([]leasehold.InsertManyParams, min(n, defaultInsertChunk))
	for i := range chunk {
		chunk[i] = leasehold.InsertManyParams{Args: noopArgs{}}
	}
	start := time.Now()
	for left := n; left > 0; left -= len(chunk) {
		chunk = chunk[:min(left, len(chunk))]
		if _, err := c.InsertBulk(ctx, chunk); err != nil {
			return 0, err
		}
	}
	return time.Since(start), nil
}

func (b *bench) runInsert(ctx context.Context) error {
	s, err := b.newScratch(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	d, err := insertJobs(ctx, s.drv, b.opts.Jobs)
	if err != nil {
		return err
	}
	r := &InsertResult{Jobs: b.opts.Jobs, Chunk: defaultInsertChunk, Seconds: d.Seconds(),
		JobsPerSec: float64(b.opts.Jobs) / d.Seconds()}
	b.rep.Insert = r
	b.logf("insert: %d jobs in %.2fs: %.0f jobs/s", r.Jobs, r.Seconds, r.JobsPerSec)
	return nil
}

// runDrain drains once per worker count. With the ceiling phase, it
// measures the ceiling before the first drain and after each drain, and
// compares each drain with the mean of the ceilings around it.
func (b *bench) runDrain(ctx context.Context) error {
	paired := b.want(PhaseCeiling)
	var before float64
	if paired {
		var err error
		if before, err = b.measureCeiling(ctx); err != nil {
			return fmt.Errorf("ceiling: %w", err)
		}
	}
	for _, w := range b.opts.Workers {
		r, err := b.drainOnce(ctx, w, nil)
		if err != nil {
			return fmt.Errorf("%d workers: %w", w, err)
		}
		if w == leasehold.DefaultMaxWorkers && b.opts.Metrics {
			if err := b.drainMetrics(ctx, r); err != nil {
				return fmt.Errorf("%d workers with metrics: %w", w, err)
			}
		}
		if paired {
			after, err := b.measureCeiling(ctx)
			if err != nil {
				return fmt.Errorf("ceiling: %w", err)
			}
			r.Ceiling, before = (before+after)/2, after
		}
		b.rep.Drain = append(b.rep.Drain, r)
		b.logf("drain: %4d workers: %d jobs in %.2fs: %.0f jobs/s, %.3f statements/job (%d claims, %d finishes)",
			w, r.Jobs, r.Seconds, r.JobsPerSec, r.StatementsPerJob, r.Calls.Claim, r.Calls.Finish)
	}
	return nil
}

// drainMetrics runs Rounds pairs of drains with plain's workers after
// plain, one with metrics and one without, alternating which goes first
// (see MetricsDrain).
func (b *bench) drainMetrics(ctx context.Context, plain DrainResult) error {
	md := &MetricsDrain{Rounds: b.opts.MetricsRounds, Tracing: b.opts.Tracing}
	var runs, plains []DrainResult
	var ratios []float64
	for i := range md.Rounds {
		with, without, err := b.drainPair(ctx, plain.Workers, i%2 == 1)
		if err != nil {
			return err
		}
		runs, plains = append(runs, with), append(plains, without)
		ratios = append(ratios, with.JobsPerSec/without.JobsPerSec)
		md.WithMetrics, md.Plain = append(md.WithMetrics, with.JobsPerSec), append(md.Plain, without.JobsPerSec)
		b.logf("drain: %4d workers, round %d: + metrics %.0f jobs/s, %.1f µs CPU/job; plain %.0f jobs/s, %.1f µs CPU/job: %.1f%%",
			plain.Workers, i+1, with.JobsPerSec, with.Cost.CPUMicrosPerJob, without.JobsPerSec, without.Cost.CPUMicrosPerJob, 100*ratios[i])
	}
	md.Ratio = median(ratios)
	md.WithMetricsCPU, md.PlainCPU = median(cpuPerJob(runs)), median(cpuPerJob(plains))
	md.Scrapes, md.EventsDropped = b.metricsTotals()
	slices.SortFunc(runs, func(x, y DrainResult) int { return cmp.Compare(x.JobsPerSec, y.JobsPerSec) })
	md.DrainResult = runs[len(runs)/2]
	b.rep.DrainMetrics = md
	b.logf("drain: with metrics at %.1f%% of plain (median of %d rounds), %.1f vs %.1f µs CPU/job (%d scrapes, %d events dropped)",
		100*md.Ratio, md.Rounds, md.WithMetricsCPU, md.PlainCPU, md.Scrapes, md.EventsDropped)
	return nil
}

// drainPair drains with w workers twice, with metrics and without; plain
// first when plainFirst.
func (b *bench) drainPair(ctx context.Context, w int, plainFirst bool) (with, without DrainResult, err error) {
	dm, err := newDrainMetrics(b.opts.Tracing)
	if err != nil {
		return with, without, err
	}
	for _, metrics := range []bool{!plainFirst, plainFirst} {
		if metrics {
			if with, err = b.drainOnce(ctx, w, dm); err != nil {
				return with, without, err
			}
			b.metricsRuns = append(b.metricsRuns, dm)
		} else if without, err = b.drainOnce(ctx, w, nil); err != nil {
			return with, without, fmt.Errorf("plain: %w", err)
		}
	}
	return with, without, nil
}

// metricsTotals sums the scrapes and dropped events of the drains with
// metrics.
func (b *bench) metricsTotals() (scrapes int, dropped int64) {
	for _, dm := range b.metricsRuns {
		scrapes, dropped = scrapes+dm.scrapes, dropped+dm.eventsDropped
	}
	return scrapes, dropped
}

func cpuPerJob(rs []DrainResult) []float64 {
	out := make([]float64, len(rs))
	for i, r := range rs {
		out[i] = r.Cost.CPUMicrosPerJob
	}
	return out
}

// drainOnce inserts Jobs no-op jobs, then times a default client with w
// workers until it has completed all of them; with metrics (dm not nil)
// attached to the client.
func (b *bench) drainOnce(ctx context.Context, w int, dm *drainMetrics) (DrainResult, error) {
	r := DrainResult{Workers: w, Default: w == leasehold.DefaultMaxWorkers, Jobs: b.opts.Jobs}
	s, err := b.newScratch(ctx)
	if err != nil {
		return r, err
	}
	defer s.Close()
	if _, err := insertJobs(ctx, s.drv, r.Jobs); err != nil {
		return r, err
	}
	if err := s.settle(ctx); err != nil {
		return r, err
	}
	workers := leasehold.NewWorkers()
	if err := leasehold.AddWorker(workers, leasehold.WorkFunc[noopArgs](func(context.Context, *leasehold.Job[noopArgs]) error {
		return nil
	})); err != nil {
		return r, err
	}
	var n callCounts
	cfg := leasehold.Config{
		Driver: counted(s.drv, &n), Workers: workers, Logger: b.opts.Logger,
		Queues: map[string]leasehold.QueueConfig{leasehold.DefaultQueue: {MaxWorkers: w}},
	}
	dm.configure(&cfg)
	c, err := leasehold.NewClient(cfg)
	if err != nil {
		return r, err
	}
	if err := dm.attach(c); err != nil {
		return r, err
	}
	if err := b.resetStatements(ctx); err != nil {
		return r, err
	}
	start, cost := time.Now(), startCost()
	if err := c.Start(ctx); err != nil {
		return r, err
	}
	werr := waitCompleted(ctx, c, int64(r.Jobs), b.opts.Timeout)
	elapsed := time.Since(start)
	r.Cost = cost.perJob(r.Jobs)
	stopErr := c.Stop(context.WithoutCancel(ctx))
	metricsErr := dm.close(r.Jobs)
	if werr != nil {
		return r, werr
	}
	if stopErr != nil {
		return r, stopErr
	}
	if metricsErr != nil {
		return r, metricsErr
	}
	r.Seconds = elapsed.Seconds()
	r.JobsPerSec = float64(r.Jobs) / r.Seconds
	r.Calls = n.snapshot()
	r.Statements, r.Top, err = b.readStatements(ctx, &n)
	r.StatementsPerJob = float64(r.Statements) / float64(r.Jobs)
	if len(r.Top) > 6 {
		r.Top = r.Top[:6]
	}
	return r, err
}

// waitCompleted waits until c has completed want jobs.
func waitCompleted(ctx context.Context, c *leasehold.Client, want int64, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	t := time.NewTicker(completionPollEvery)
	defer t.Stop()
	for c.Stats().Completed < want {
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %v: %d of %d jobs completed (stats %+v)",
				timeout, c.Stats().Completed, want, c.Stats())
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
	return nil
}

// resetStatements starts a statement count.
func (b *bench) resetStatements(ctx context.Context) error {
	if b.stats == nil {
		return nil
	}
	if err := b.stats.reset(ctx); err != nil {
		return fmt.Errorf("reset pg_stat_statements: %w", err)
	}
	return nil
}

// readStatements returns the statements since resetStatements: from
// pg_stat_statements, or the driver calls n.
func (b *bench) readStatements(ctx context.Context, n *callCounts) (int64, []Statement, error) {
	if b.stats == nil {
		return n.total(), nil, nil
	}
	return b.stats.read(ctx)
}
