package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/leasehold/leasehold"
	leaseholdprom "github.com/leasehold/leasehold/contrib/prometheus"
)

// scrapeEvery is how often the metrics drain gathers its registry: more
// often than Prometheus's usual 15 s, so that the cost of a scrape shows.
const scrapeEvery = time.Second

// countedWait bounds the wait for the metrics to count the last jobs.
const countedWait = 5 * time.Second

// MetricsDrain compares the drain with the default worker count with and
// without Prometheus metrics (contrib/prometheus, attached as a program
// would, its registry gathered every second), and with Options.Tracing
// with metrics and OpenTelemetry tracing: after the sweep, Rounds rounds
// of a plain drain, one with metrics and each traced one, their order
// rotating from one round to the next so that no place in it favours one
// side, and each round's ratios to its plain drain taken, so that a drift
// of a shared machine during the run weighs on both sides of a ratio
// alike.
type MetricsDrain struct {
	// DrainResult is the drain with metrics of median rate.
	DrainResult
	Rounds int `json:"rounds"`
	// Plain and WithMetrics are the rates of the rounds' drains, in round
	// order.
	Plain       []float64 `json:"plain_jobs_per_sec"`
	WithMetrics []float64 `json:"with_metrics_jobs_per_sec"`
	// Ratio is the median over the rounds of the rate with metrics over
	// the plain rate.
	Ratio float64 `json:"ratio_to_plain"`
	// PlainCPU and WithMetricsCPU are the medians of the bench process's
	// CPU time per job (Cost.CPUMicrosPerJob): what the metrics cost the
	// client itself, the least noisy figure on a shared machine.
	PlainCPU       float64 `json:"plain_cpu_us_per_job,omitempty"`
	WithMetricsCPU float64 `json:"with_metrics_cpu_us_per_job,omitempty"`
	Scrapes        int     `json:"scrapes"`
	// EventsDropped counts events the metrics' subscriptions missed: a
	// consumer that fell behind would under-count.
	EventsDropped int64 `json:"events_dropped"`
	// Traced are the drains with metrics and tracing, one per sampling
	// ratio: Options.TraceSample, then every span.
	Traced []TracedDrain `json:"traced,omitempty"`
}

// TracedDrain is the default drain with metrics and tracing at one
// sampling ratio, measured in the rounds of a MetricsDrain.
type TracedDrain struct {
	// DrainResult is the traced drain of median rate.
	DrainResult
	// Sample is the sampler's ratio: 1 samples every span.
	Sample float64 `json:"sample_ratio"`
	// Rates are the rates of the rounds' traced drains, in round order.
	Rates []float64 `json:"jobs_per_sec"`
	// Ratio is the median over the rounds of the traced rate over the
	// round's plain rate.
	Ratio float64 `json:"ratio_to_plain"`
	// CPU is the median of the client's CPU time per job.
	CPU float64 `json:"cpu_us_per_job,omitempty"`
	// SampledJobs counts the jobs of all rounds whose trace was sampled,
	// and Spans the spans exported: one per sampled job's handler run.
	SampledJobs int64 `json:"sampled_jobs"`
	Spans       int64 `json:"spans_exported"`
}

// drainMetrics wires metrics (and tracing, when tracing is set) into one
// drain's client and scrapes them.
type drainMetrics struct {
	reg           *prometheus.Registry
	m             *leaseholdprom.Metrics
	tracing       *drainTracing // nil without tracing
	client        *leasehold.Client
	stop          chan struct{}
	done          chan struct{}
	scrapes       int
	eventsDropped int64
	err           error
}

// newDrainMetrics makes the metrics of one drain, and with sample above
// zero its tracing at that ratio.
func newDrainMetrics(sample float64) (*drainMetrics, error) {
	reg := prometheus.NewRegistry()
	m, err := leaseholdprom.New(leaseholdprom.Options{Registerer: reg})
	if err != nil {
		return nil, err
	}
	d := &drainMetrics{reg: reg, m: m, stop: make(chan struct{}), done: make(chan struct{})}
	if sample > 0 {
		d.tracing = newDrainTracing(sample)
	}
	return d, nil
}

// configure adds the insert middleware to cfg; d may be nil (no metrics).
func (d *drainMetrics) configure(cfg *leasehold.Config) {
	if d != nil {
		cfg.InsertMiddleware = append(cfg.InsertMiddleware, d.m.InsertMiddleware())
		d.tracing.configure(cfg)
	}
}

// jobMetadata returns the metadata of the n drained jobs: nil without
// tracing, else see drainTracing.jobMetadata; d may be nil.
func (d *drainMetrics) jobMetadata(ctx context.Context, n int) ([]json.RawMessage, error) {
	if d == nil {
		return nil, nil
	}
	return d.tracing.jobMetadata(ctx, n)
}

// attach subscribes the metrics to c and starts scraping; d may be nil.
func (d *drainMetrics) attach(c *leasehold.Client) error {
	if d == nil {
		return nil
	}
	if err := d.m.Attach(c); err != nil {
		return err
	}
	d.client = c
	go d.scrape()
	return nil
}

func (d *drainMetrics) scrape() {
	defer close(d.done)
	t := time.NewTicker(scrapeEvery)
	defer t.Stop()
	for {
		if _, err := d.reg.Gather(); err != nil && d.err == nil {
			d.err = fmt.Errorf("gather: %w", err)
		}
		d.scrapes++
		select {
		case <-d.stop:
			return
		case <-t.C:
		}
	}
}

// close stops scraping, checks that the metrics counted every job, and
// unregisters them; d may be nil.
func (d *drainMetrics) close(jobs int) error {
	if d == nil {
		return nil
	}
	close(d.stop)
	<-d.done
	d.eventsDropped = d.client.Stats().EventsDropped
	err := d.counted(jobs)
	d.m.Close()
	if terr := d.tracing.close(); err == nil {
		err = terr
	}
	if d.err == nil {
		d.err = err
	}
	return d.err
}

// counted waits, for a few seconds at most, until the metrics have
// counted jobs completed jobs: their consumer may still hold the last
// events.
func (d *drainMetrics) counted(jobs int) error {
	deadline := time.Now().Add(countedWait)
	for {
		n, err := d.completed()
		if err != nil || n == float64(jobs) {
			return err
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("metrics counted %v completed jobs of %d (%d events dropped)", n, jobs, d.eventsDropped)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// completed sums leasehold_jobs_finished_total{outcome="completed"}.
func (d *drainMetrics) completed() (float64, error) {
	mfs, err := d.reg.Gather()
	if err != nil {
		return 0, err
	}
	var n float64
	for _, mf := range mfs {
		if mf.GetName() != "leasehold_jobs_finished_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "outcome" && l.GetValue() == string(leasehold.OutcomeCompleted) {
					n += m.GetCounter().GetValue()
				}
			}
		}
	}
	return n, nil
}
