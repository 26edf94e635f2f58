package bench

import (
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
// would, its registry gathered every second): after the sweep, Rounds
// pairs of a drain with metrics and a plain one, the pair's order
// alternating so that neither place in it favours one side, and each
// pair's ratio taken, so that a drift of a shared machine during the run
// weighs on both sides of a pair alike.
type MetricsDrain struct {
	// DrainResult is the drain with metrics of median rate.
	DrainResult
	Rounds int `json:"rounds"`
	// Tracing is set when the drains with metrics were traced too.
	Tracing bool `json:"tracing,omitempty"`
	// Plain and WithMetrics are the rates of the pairs' drains, in round
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
}

// drainMetrics wires metrics (and, with Options.Tracing, tracing) into
// one drain's client and scrapes them.
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

func newDrainMetrics(tracing bool) (*drainMetrics, error) {
	reg := prometheus.NewRegistry()
	m, err := leaseholdprom.New(leaseholdprom.Options{Registerer: reg})
	if err != nil {
		return nil, err
	}
	d := &drainMetrics{reg: reg, m: m, stop: make(chan struct{}), done: make(chan struct{})}
	if tracing {
		d.tracing = newDrainTracing()
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
	if terr := d.tracing.close(jobs); err == nil {
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
