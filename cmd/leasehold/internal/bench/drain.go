package bench

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"runtime"
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
	// and just after this drain; CeilingRatio is JobsPerSec over it. For
	// the drain with the default worker count, measured in Rounds, they
	// are the median of the rounds' ceilings and the median of the
	// rounds' ratios, and this drain is the round of median rate.
	Ceiling      float64        `json:"ceiling,omitempty"`
	CeilingRatio float64        `json:"ceiling_ratio,omitempty"`
	Rounds       []CeilingRound `json:"ceiling_rounds,omitempty"`
	// BestRatio is JobsPerSec over the fastest ceiling of the whole run:
	// the most pessimistic comparison.
	BestRatio float64 `json:"best_ratio,omitempty"`
	// Cost is the client's own cost per job during the drain.
	Cost  Cost  `json:"client_cost"`
	Calls Calls `json:"driver_calls"`
	// Retried is how many of the jobs the drain retried (Options.RetryEvery).
	Retried int64 `json:"retried,omitempty"`
	// Statements counts database statements (see Report.StatementSource).
	Statements       int64       `json:"statements"`
	StatementsPerJob float64     `json:"statements_per_job"`
	Top              []Statement `json:"top_statements,omitempty"`
	// Rows is the WAL and dead row versions per job, on PostgreSQL.
	Rows *RowCost `json:"row_cost,omitempty"`
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
	return insertJobsWith(ctx, drv, n, nil)
}

// insertJobsWith is insertJobs where job i has metadata md[i] when md is
// not nil.
func insertJobsWith(ctx context.Context, drv driver.Driver, n int, md []json.RawMessage) (time.Duration, error) {
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
		if md != nil {
			for i := range chunk {
				chunk[i].Opts = &leasehold.InsertOpts{Metadata: md[n-left+i]}
			}
		}
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
// compares the default worker count's drain with the ceiling in rounds
// (drainRounds), and every other drain with the mean of the ceilings
// measured just before and just after it.
func (b *bench) runDrain(ctx context.Context) error {
	paired := b.want(PhaseCeiling)
	var before float64 // the last ceiling measured; 0 before the first
	for _, w := range b.opts.Workers {
		r, last, err := b.drainPaired(ctx, w, paired, before)
		if err != nil {
			return fmt.Errorf("%d workers: %w", w, err)
		}
		before = last
		if w == leasehold.DefaultMaxWorkers && b.opts.Metrics {
			if err := b.drainMetrics(ctx, r); err != nil {
				return fmt.Errorf("%d workers with metrics: %w", w, err)
			}
		}
		b.rep.Drain = append(b.rep.Drain, r)
		b.logf("drain: %4d workers: %d jobs in %.2fs: %.0f jobs/s, %.3f statements/job (%d claims, %d finishes)%s",
			w, r.Jobs, r.Seconds, r.JobsPerSec, r.StatementsPerJob, r.Calls.Claim, r.Calls.Finish, r.Rows.describe())
	}
	return nil
}

// drainPaired drains with w workers; when paired, against the ceiling
// too, before being the last ceiling measured (0 for none yet). It
// returns the last ceiling measured.
func (b *bench) drainPaired(ctx context.Context, w int, paired bool, before float64) (DrainResult, float64, error) {
	if !paired {
		r, err := b.drainOnce(ctx, w, nil)
		return r, 0, err
	}
	if w == leasehold.DefaultMaxWorkers {
		return b.drainRounds(ctx, w)
	}
	var err error
	if before == 0 {
		if before, err = b.measureCeiling(ctx); err != nil {
			return DrainResult{}, 0, fmt.Errorf("ceiling: %w", err)
		}
	}
	r, err := b.drainOnce(ctx, w, nil)
	if err != nil {
		return r, 0, err
	}
	after, err := b.measureCeiling(ctx)
	if err != nil {
		return r, 0, fmt.Errorf("ceiling: %w", err)
	}
	r.Ceiling = (before + after) / 2
	return r, after, nil
}

// drainVariant is one side of a round of MetricsDrain: with metrics or
// not, and traced at ratio sample (0: not traced).
type drainVariant struct {
	metrics bool
	sample  float64
}

// variants are the drains of a round: plain, with metrics, and with
// Options.Tracing with metrics and tracing at TraceSample and at 1.
func (b *bench) variants() []drainVariant {
	vs := []drainVariant{{}, {metrics: true}}
	if b.opts.Tracing {
		vs = append(vs, drainVariant{true, b.opts.TraceSample})
		if b.opts.TraceSample != 1 {
			vs = append(vs, drainVariant{true, 1})
		}
	}
	return vs
}

// drainMetrics runs Rounds rounds of the variants' drains with plain's
// workers after plain, rotating their order (see MetricsDrain).
func (b *bench) drainMetrics(ctx context.Context, plain DrainResult) error {
	vs := b.variants()
	md := &MetricsDrain{Rounds: b.opts.MetricsRounds}
	runs := make([][]DrainResult, len(vs)) // by variant, in round order
	for i := range md.Rounds {
		round := make([]DrainResult, len(vs))
		for k := range vs {
			v := (k + i) % len(vs)
			r, err := b.drainVariant(ctx, plain.Workers, vs[v])
			if err != nil {
				return err
			}
			round[v] = r
		}
		for v, r := range round {
			runs[v] = append(runs[v], r)
		}
		b.logRound(plain.Workers, i, vs, round)
	}
	md.Plain, md.WithMetrics = ratesOf(runs[0]), ratesOf(runs[1])
	md.Ratio = median(ratiosOf(runs[1], runs[0]))
	md.WithMetricsCPU, md.PlainCPU = median(cpuPerJob(runs[1])), median(cpuPerJob(runs[0]))
	md.Scrapes, md.EventsDropped = b.metricsTotals()
	md.DrainResult = medianRun(runs[1])
	for v := 2; v < len(vs); v++ {
		md.Traced = append(md.Traced, b.traced(vs[v].sample, runs[v], runs[0]))
	}
	b.rep.DrainMetrics = md
	b.logf("drain: with metrics at %.1f%% of plain (median of %d rounds), %.1f vs %.1f µs CPU/job (%d scrapes, %d events dropped)",
		100*md.Ratio, md.Rounds, md.WithMetricsCPU, md.PlainCPU, md.Scrapes, md.EventsDropped)
	for _, t := range md.Traced {
		b.logf("drain: with metrics and tracing sampled at %g at %.1f%% of plain, %.1f µs CPU/job (%d of %d jobs sampled, %d spans)",
			t.Sample, 100*t.Ratio, t.CPU, t.SampledJobs, t.Jobs*md.Rounds, t.Spans)
	}
	return nil
}

// traced sums up the traced drains runs at ratio sample against the
// plain drains of the same rounds.
func (b *bench) traced(sample float64, runs, plain []DrainResult) TracedDrain {
	t := TracedDrain{Sample: sample, Rates: ratesOf(runs), Ratio: median(ratiosOf(runs, plain)),
		CPU: median(cpuPerJob(runs)), DrainResult: medianRun(runs)}
	for _, dm := range b.metricsRuns {
		if dm.tracing != nil && dm.tracing.sample == sample {
			t.SampledJobs += dm.tracing.sampled
			t.Spans += dm.tracing.exporter.spans.Load()
		}
	}
	return t
}

// logRound prints the drains of round i.
func (b *bench) logRound(w, i int, vs []drainVariant, round []DrainResult) {
	line := fmt.Sprintf("drain: %4d workers, round %d:", w, i+1)
	for v, r := range round {
		line += fmt.Sprintf(" %s %.0f jobs/s, %.1f µs CPU/job", vs[v], r.JobsPerSec, r.Cost.CPUMicrosPerJob)
		if v > 0 {
			line += fmt.Sprintf(" (%.1f%%)", 100*r.JobsPerSec/round[0].JobsPerSec)
		}
		line += ";"
	}
	b.logf("%s", line[:len(line)-1])
}

// String names v in the progress lines.
func (v drainVariant) String() string {
	switch {
	case v.sample > 0:
		return fmt.Sprintf("+ metrics + tracing %g:", v.sample)
	case v.metrics:
		return "+ metrics:"
	}
	return "plain:"
}

// drainVariant drains once with w workers as v says.
func (b *bench) drainVariant(ctx context.Context, w int, v drainVariant) (DrainResult, error) {
	if !v.metrics {
		r, err := b.drainOnce(ctx, w, nil)
		if err != nil {
			return r, fmt.Errorf("plain: %w", err)
		}
		return r, nil
	}
	dm, err := newDrainMetrics(v.sample)
	if err != nil {
		return DrainResult{}, err
	}
	r, err := b.drainOnce(ctx, w, dm)
	if err != nil {
		return r, fmt.Errorf("%s %w", v, err)
	}
	b.metricsRuns = append(b.metricsRuns, dm)
	return r, nil
}

// metricsTotals sums the scrapes and dropped events of the drains with
// metrics.
func (b *bench) metricsTotals() (scrapes int, dropped int64) {
	for _, dm := range b.metricsRuns {
		scrapes, dropped = scrapes+dm.scrapes, dropped+dm.eventsDropped
	}
	return scrapes, dropped
}

// medianRun returns the run of median rate of rs.
func medianRun(rs []DrainResult) DrainResult {
	rs = slices.Clone(rs)
	slices.SortFunc(rs, func(x, y DrainResult) int { return cmp.Compare(x.JobsPerSec, y.JobsPerSec) })
	return rs[len(rs)/2]
}

func ratesOf(rs []DrainResult) []float64 {
	out := make([]float64, len(rs))
	for i, r := range rs {
		out[i] = r.JobsPerSec
	}
	return out
}

// ratiosOf returns the rates of rs over those of base, round by round.
func ratiosOf(rs, base []DrainResult) []float64 {
	out := make([]float64, len(rs))
	for i := range rs {
		out[i] = rs[i].JobsPerSec / base[i].JobsPerSec
	}
	return out
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
	md, err := dm.jobMetadata(ctx, r.Jobs)
	if err != nil {
		return r, err
	}
	if _, err := insertJobsWith(ctx, s.drv, r.Jobs, md); err != nil {
		return r, err
	}
	if err := s.settle(ctx); err != nil {
		return r, err
	}
	runtime.GC() // what the inserts left is not the drain's to collect
	workers := leasehold.NewWorkers()
	if err := leasehold.AddWorker(workers, leasehold.WorkFunc[noopArgs](b.noop)); err != nil {
		return r, err
	}
	var n callCounts
	cfg := leasehold.Config{
		Driver: counted(s.drv, &n), Workers: workers, Logger: b.opts.Logger,
		Queues: map[string]leasehold.QueueConfig{leasehold.DefaultQueue: {MaxWorkers: w}},
	}
	if b.opts.RetryEvery > 0 {
		cfg.RetryPolicy = &leasehold.ExponentialBackoff{Base: time.Hour, Max: time.Hour, Jitter: 0.2}
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
	mark, err := s.markRows(ctx)
	if err != nil {
		return r, err
	}
	start, cost := time.Now(), startCost()
	if err := c.Start(ctx); err != nil {
		return r, err
	}
	werr := waitCompleted(ctx, c, int64(r.Jobs), b.opts.Timeout)
	elapsed := time.Since(start)
	r.Cost = cost.perJob(r.Jobs)
	r.Retried = c.Stats().Retried
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
	if err != nil {
		return r, err
	}
	r.StatementsPerJob = float64(r.Statements) / float64(r.Jobs)
	if len(r.Top) > 6 {
		r.Top = r.Top[:6]
	}
	r.Rows, err = s.rowCost(ctx, mark, r.Jobs)
	return r, err
}

// noop is the drained jobs' handler: it does nothing, and fails the jobs
// Options.RetryEvery names, each with an error of its own.
func (b *bench) noop(_ context.Context, j *leasehold.Job[noopArgs]) error {
	if n := int64(b.opts.RetryEvery); n > 0 && j.ID%n == 0 {
		return fmt.Errorf("card declined (job %d)", j.ID)
	}
	return nil
}

// waitCompleted waits until c has completed or retried want jobs.
func waitCompleted(ctx context.Context, c *leasehold.Client, want int64, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	t := time.NewTicker(completionPollEvery)
	defer t.Stop()
	for s := c.Stats(); s.Completed+s.Retried < want; s = c.Stats() {
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %v: %d of %d jobs completed or retried (stats %+v)",
				timeout, s.Completed+s.Retried, want, s)
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
