package leaseholdprom

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/leasehold/leasehold"
)

// clientCollector reads the attached client at scrape time: its running
// handlers and dropped events from Stats, and its queues' depth from the
// database, at most once per interval.
type clientCollector struct {
	running, eventsDropped, queueJobs, oldestDue *prometheus.Desc
	failures                                     prometheus.Counter
	interval                                     time.Duration // negative: no queue gauges

	client atomic.Pointer[leasehold.Client]

	mu     sync.Mutex // serialises readings, so concurrent scrapes share one
	readAt time.Time  // when the last reading was tried; zero before the first
	last   []*leasehold.QueueStats
	// known holds every queue an earlier reading reported, with the
	// number of readings in a row since that did not, so that its series
	// show 0 rather than vanish while it has no unfinished job (a
	// dashboard shows an empty queue as 0), until forgetAfter such
	// readings. The queues the client works (see worked) always show,
	// and so are never forgotten.
	known map[string]int
}

// forgetAfter is how many readings in a row a queue that the client does
// not work, and that an earlier reading reported, keeps its
// series at 0 while it has no unfinished job; the next such reading
// forgets it, so that queues named from an application's input (one per
// tenant, say) do not add series for the life of the process.
const forgetAfter = 10

func newClientCollector(ns string, interval time.Duration) *clientCollector {
	name := func(n string) string { return prometheus.BuildFQName(ns, "", n) }
	return &clientCollector{
		running: prometheus.NewDesc(name("jobs_running"),
			"Handlers running now, or claimed and about to run.", nil, nil),
		eventsDropped: prometheus.NewDesc(name("events_dropped_total"),
			"Events the client's subscribers missed because their channel was full.", nil, nil),
		queueJobs: prometheus.NewDesc(name("queue_jobs"),
			"Unfinished jobs in the queue by state, as last read from the database (estimated beyond 100,000 per state on PostgreSQL).", []string{"queue", "state"}, nil),
		oldestDue: prometheus.NewDesc(name("queue_oldest_due_seconds"),
			"How long the queue's oldest due pending job has waited, by the database clock, as last read.", []string{"queue"}, nil),
		failures: prometheus.NewCounter(prometheus.CounterOpts{Namespace: ns, Name: "queue_stats_failures_total",
			Help: "Readings of the queue gauges from the database that failed."}),
		interval: interval,
	}
}

// attach makes the collector read c; nil stops it reading.
func (q *clientCollector) attach(c *leasehold.Client) { q.client.Store(c) }

// Describe implements prometheus.Collector.
func (q *clientCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- q.running
	ch <- q.eventsDropped
	ch <- q.queueJobs
	ch <- q.oldestDue
	q.failures.Describe(ch)
}

// Collect implements prometheus.Collector.
func (q *clientCollector) Collect(ch chan<- prometheus.Metric) {
	// Sent last: the reading below may count a failure, which this
	// scrape then shows.
	defer q.failures.Collect(ch)
	c := q.client.Load()
	if c == nil {
		return
	}
	st := c.Stats()
	ch <- prometheus.MustNewConstMetric(q.running, prometheus.GaugeValue, float64(st.Running))
	ch <- prometheus.MustNewConstMetric(q.eventsDropped, prometheus.CounterValue, float64(st.EventsDropped))
	if q.interval < 0 {
		return
	}
	for _, s := range q.queueStats(c) {
		for _, state := range leasehold.AllStates {
			if state.Finished() {
				continue // finished jobs are counted by the outcome counters
			}
			ch <- prometheus.MustNewConstMetric(q.queueJobs, prometheus.GaugeValue, float64(s.Counts[state]),
				s.Queue, string(state))
		}
		ch <- prometheus.MustNewConstMetric(q.oldestDue, prometheus.GaugeValue, s.OldestPending.Seconds(), s.Queue)
	}
}

// gaugeCountLimit is how many jobs of one state of a queue the gauges
// count exactly before taking the database's estimate: more than the
// dashboard's, since a backlog alert wants exact figures and the gauges
// are read in the background at most once per interval.
const gaugeCountLimit = 100_000

// queueStats returns the last reading, reading again when it is older
// than the interval. A failed reading counts a failure and reports no
// queue until the next one, so stale figures never pass for fresh.
func (q *clientCollector) queueStats(c *leasehold.Client) []*leasehold.QueueStats {
	q.mu.Lock()
	defer q.mu.Unlock()
	if !q.readAt.IsZero() && time.Since(q.readAt) < q.interval {
		return q.last
	}
	q.readAt = time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), queueStatsTimeout)
	defer cancel()
	qs, err := c.ActiveQueueStats(ctx, gaugeCountLimit)
	if err != nil {
		q.failures.Inc()
		qs = nil
	} else {
		qs = q.withKnown(qs, worked(c))
	}
	q.last = qs
	return qs
}

// worked returns the queues c works: its configured queues when it has
// workers, none when it has not. Every client is configured with a
// queue, "default" when it names none, so a client that only inserts
// jobs (or an operator's, such as leasehold serve's) would otherwise
// show a queue that nothing runs and that may hold no job at all.
func worked(c *leasehold.Client) []string {
	if !c.Works() {
		return nil
	}
	return c.Queues()
}

// withKnown returns qs with an empty entry for each queue it lacks that
// is among queues (the queues the client works) or known, and updates
// the known queues: qs's queues are known afresh, and a known queue
// absent from forgetAfter readings in a row before this one is
// forgotten. q.mu is held.
func (q *clientCollector) withKnown(qs []*leasehold.QueueStats, queues []string) []*leasehold.QueueStats {
	if q.known == nil {
		q.known = map[string]int{}
	}
	shown := make(map[string]bool, len(qs)+len(queues))
	for _, s := range qs {
		shown[s.Queue] = true
		q.known[s.Queue] = 0
	}
	for _, name := range queues {
		if !shown[name] {
			shown[name] = true
			qs = append(qs, emptyQueue(name))
		}
	}
	for name, absent := range q.known {
		switch {
		case shown[name]:
		case absent >= forgetAfter:
			delete(q.known, name)
		default:
			q.known[name] = absent + 1
			qs = append(qs, emptyQueue(name))
		}
	}
	return qs
}

// emptyQueue returns the reading of a queue with no unfinished job.
func emptyQueue(name string) *leasehold.QueueStats {
	return &leasehold.QueueStats{Queue: name, Counts: map[leasehold.JobState]int64{}}
}
