package leaseholdprom

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/leasehold/leasehold"
)

// Defaults of Options.
const (
	DefaultNamespace          = "leasehold"
	DefaultQueueStatsInterval = 15 * time.Second
	DefaultEventBuffer        = 8192
	// queueStatsTimeout bounds one reading of the queue gauges.
	queueStatsTimeout = 5 * time.Second
	// coalesceEvents is how long the event consumer lets events gather
	// between batches: DefaultEventBuffer holds this long of a client
	// finishing over 500,000 jobs a second (three events each).
	coalesceEvents = 5 * time.Millisecond
)

// DefaultHandlerBuckets are the upper bounds, in seconds, of the handler
// duration histogram: Prometheus's default buckets, extended to the
// minutes a job may take.
var DefaultHandlerBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300, 900}

// latencyBuckets are the upper bounds, in seconds, of the claim-to-start
// and heartbeat histograms: database round trips, from a fraction of a
// millisecond to the seconds of a struggling server.
var latencyBuckets = []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// ErrAttached is returned by Attach when the Metrics already serve a
// client, or were closed.
var ErrAttached = errors.New("leaseholdprom: already attached or closed")

// Options configure New. Every field is optional.
type Options struct {
	// Registerer receives the metrics. Default
	// prometheus.DefaultRegisterer. To tell several clients of one process
	// apart, give each its own Metrics on
	// prometheus.WrapRegistererWith(prometheus.Labels{"client": name}, reg).
	Registerer prometheus.Registerer
	// Namespace prefixes every metric name. Default DefaultNamespace.
	Namespace string
	// QueueStatsInterval is how old the last reading of the queue gauges
	// (leasehold_queue_jobs, leasehold_queue_oldest_due_seconds) may be
	// before a scrape reads them again from the database. Default
	// DefaultQueueStatsInterval; negative: no queue gauges, no reading.
	QueueStatsInterval time.Duration
	// HandlerBuckets are the upper bounds, in seconds, of the handler
	// duration histogram, in strictly increasing order (New refuses them
	// otherwise); the +Inf bucket is implied. Default
	// DefaultHandlerBuckets.
	HandlerBuckets []float64
	// EventBuffer is the capacity of the event subscription. Default
	// DefaultEventBuffer.
	EventBuffer int
}

// Metrics are the Prometheus metrics of one leasehold client. Create them
// with New, put InsertMiddleware in the client's Config, Attach the
// client, and Close when done.
type Metrics struct {
	reg        prometheus.Registerer
	collectors []prometheus.Collector
	buffer     int
	events     *eventMetrics
	inserts    *insertMetrics
	client     *clientCollector

	mu       sync.Mutex
	attached bool
	closed   bool
	stop     func()        // ends the subscription, once attached
	done     chan struct{} // closed when the consumer has returned
}

// New creates the metrics and registers them on opts.Registerer; it fails
// when one of them is already registered there, and with an error matching
// leasehold.ErrInvalidConfig when opts.HandlerBuckets are not in strictly
// increasing order.
func New(opts Options) (*Metrics, error) {
	if opts.Registerer == nil {
		opts.Registerer = prometheus.DefaultRegisterer
	}
	ns := cmp.Or(opts.Namespace, DefaultNamespace)
	buckets := opts.HandlerBuckets
	if len(buckets) == 0 {
		buckets = DefaultHandlerBuckets
	}
	if err := checkBuckets(buckets); err != nil {
		return nil, fmt.Errorf("leaseholdprom: %w: HandlerBuckets: %w", leasehold.ErrInvalidConfig, err)
	}
	interval := cmp.Or(opts.QueueStatsInterval, DefaultQueueStatsInterval)
	m := &Metrics{
		reg:     opts.Registerer,
		buffer:  cmp.Or(opts.EventBuffer, DefaultEventBuffer),
		events:  newEventMetrics(ns, slices.Clone(buckets)),
		inserts: newInsertMetrics(ns),
		client:  newClientCollector(ns, interval),
	}
	m.collectors = append(m.events.collectors(), m.inserts.vec, m.client)
	for i, c := range m.collectors {
		if err := m.reg.Register(c); err != nil {
			m.unregister(m.collectors[:i])
			return nil, fmt.Errorf("leaseholdprom: register: %w", err)
		}
	}
	return m, nil
}

// checkBuckets refuses histogram bounds that are not in strictly
// increasing order. Prometheus checks them only when it creates a
// histogram, which a histogram vector does for each new set of label
// values: on the first event of a (queue, kind), in the event consumer's
// goroutine, where its panic would end the process. A NaN is refused too:
// it passes Prometheus's check but cannot be ordered.
func checkBuckets(b []float64) error {
	for i, v := range b {
		switch {
		case math.IsNaN(v):
			return fmt.Errorf("bound %d is NaN", i)
		case i > 0 && v <= b[i-1]:
			return fmt.Errorf("bound %d (%v) is not above bound %d (%v): want strictly increasing bounds", i, v, i-1, b[i-1])
		}
	}
	return nil
}

// InsertMiddleware returns the insert middleware that counts inserted
// jobs (leasehold_jobs_inserted_total), for Config.InsertMiddleware. A job
// is counted once the insert statement succeeded: within a caller's
// transaction, before that transaction commits or rolls back. Insert,
// InsertTx and InsertMany do not count a job whose unique key already
// existed; InsertBulk, which does not say which jobs it skipped, counts
// every job it was given.
func (m *Metrics) InsertMiddleware() leasehold.InsertMiddleware { return m.inserts }

// Attach subscribes to client's events and reads its gauges from then on.
// Attach it before client.Start, so that no event is missed. A Metrics
// serves one client: Attach fails with ErrAttached the second time, and
// after Close.
func (m *Metrics) Attach(client *leasehold.Client) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.attached || m.closed {
		return ErrAttached
	}
	m.attached = true
	events, stop := client.SubscribeBuffered(m.buffer)
	m.stop, m.done = stop, make(chan struct{})
	m.client.attach(client)
	go m.consume(events)
	return nil
}

// consume counts events until the subscription ends. It takes them in
// batches: after the events that woke it, it waits coalesceEvents before
// it looks again, so that a busy client wakes it a few hundred times a
// second rather than once per event (a wake-up costs more than counting),
// and an idle one not at all.
func (m *Metrics) consume(events <-chan leasehold.Event) {
	defer close(m.done)
	for {
		ev, ok := <-events
		if !ok {
			return
		}
		m.events.observe(&ev)
		if !m.drain(events) {
			return
		}
		time.Sleep(coalesceEvents)
	}
}

// drain counts the events already waiting; it reports false once the
// subscription has ended.
func (m *Metrics) drain(events <-chan leasehold.Event) bool {
	for {
		select {
		case ev, ok := <-events:
			if !ok {
				return false
			}
			m.events.observe(&ev)
		default:
			return true
		}
	}
}

// Close ends the subscription, counts the events already received, and
// unregisters the metrics, so that new ones may be registered in their
// place. It is safe to call more than once, and without Attach.
func (m *Metrics) Close() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	m.closed = true
	if m.stop != nil {
		m.stop()
		<-m.done
	}
	m.client.attach(nil)
	m.unregister(m.collectors)
}

func (m *Metrics) unregister(cs []prometheus.Collector) {
	for _, c := range cs {
		m.reg.Unregister(c)
	}
}

// Handler serves the metrics gathered by g in Prometheus's exposition
// formats, for a /metrics endpoint. A collector that fails does not hide
// the others: the scrape goes on and reports what it could gather.
func Handler(g prometheus.Gatherer) http.Handler {
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}
