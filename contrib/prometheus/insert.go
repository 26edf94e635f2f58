package leaseholdprom

import (
	"context"
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/leasehold/leasehold"
)

// insertMetrics counts inserted jobs; it is the insert middleware. Any
// number of goroutines insert at once.
type insertMetrics struct {
	vec *prometheus.CounterVec

	mu     sync.RWMutex
	series map[seriesKey]prometheus.Counter
}

func newInsertMetrics(ns string) *insertMetrics {
	return &insertMetrics{
		vec: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: "jobs_inserted_total",
			Help: "Jobs written by inserts (a unique key that existed is not counted, except by InsertBulk; " +
				"an InsertTx is counted when it returns, even if its transaction is then rolled back)."},
			[]string{"queue", "kind"}),
		series: map[seriesKey]prometheus.Counter{},
	}
}

// Insert implements leasehold.InsertMiddleware: it counts jobs once next
// has written them.
func (m *insertMetrics) Insert(ctx context.Context, _ any, jobs []*leasehold.InsertJob,
	next func(ctx context.Context) ([]*leasehold.InsertResult, error)) ([]*leasehold.InsertResult, error) {
	res, err := next(ctx)
	if err != nil {
		return res, err
	}
	// Runs of one queue and kind (a bulk insert is usually one) are
	// counted with one look-up and one add.
	var run seriesKey
	var n float64
	for i, j := range jobs {
		if i < len(res) && res[i] != nil && res[i].Duplicate {
			continue
		}
		k := seriesKey{j.Opts.Queue, j.Kind}
		if k != run && n > 0 {
			m.of(run).Add(n)
			n = 0
		}
		run = k
		n++
	}
	if n > 0 {
		m.of(run).Add(n)
	}
	return res, nil
}

// of returns the counter of k, resolving it the first time.
func (m *insertMetrics) of(k seriesKey) prometheus.Counter {
	m.mu.RLock()
	c, ok := m.series[k]
	m.mu.RUnlock()
	if ok {
		return c
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if c, ok = m.series[k]; !ok {
		c = m.vec.WithLabelValues(k.queue, k.kind)
		m.series[k] = c
	}
	return c
}
