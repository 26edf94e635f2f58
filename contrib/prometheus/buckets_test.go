package leaseholdprom_test

import (
	"errors"
	"math"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/leasehold/leasehold"
	leaseholdprom "github.com/leasehold/leasehold/contrib/prometheus"
	"github.com/leasehold/leasehold/sqlitedriver/sqlitetest"
)

// TestHandlerBucketsRefused: New refuses handler buckets that are not in
// strictly increasing order with an error matching
// leasehold.ErrInvalidConfig, and registers nothing, instead of accepting
// buckets that Prometheus refuses with a panic on the first job event, in
// the event consumer's goroutine.
func TestHandlerBucketsRefused(t *testing.T) {
	for _, tt := range []struct {
		name    string
		buckets []float64
	}{
		{"decreasing", []float64{1, 0.5}},
		{"repeated", []float64{0.5, 1, 1}},
		{"+Inf before the last", []float64{0.1, math.Inf(1), 1}},
		{"NaN", []float64{math.NaN()}},
		{"NaN between", []float64{0.1, math.NaN(), 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			reg := prometheus.NewRegistry()
			m, err := leaseholdprom.New(leaseholdprom.Options{Registerer: reg, HandlerBuckets: tt.buckets})
			if !errors.Is(err, leasehold.ErrInvalidConfig) || m != nil {
				if m != nil {
					m.Close()
				}
				t.Fatalf("New with HandlerBuckets %v: Metrics returned %t, error %v; want none, and an error matching ErrInvalidConfig",
					tt.buckets, m != nil, err)
			}
			if mfs, err := reg.Gather(); err != nil || len(mfs) != 0 {
				t.Errorf("registry after a refused New holds %d families (%v), want none", len(mfs), err)
			}
		})
	}
}

// TestHandlerBucketsAccepted: increasing buckets, with or without the
// implied +Inf at the end, are accepted and count the handlers of a
// client's jobs.
func TestHandlerBucketsAccepted(t *testing.T) {
	for _, buckets := range [][]float64{{2}, {0.1, 1, math.Inf(1)}} {
		workers := leasehold.NewWorkers()
		if err := leasehold.AddWorker(workers, handler(nil)); err != nil {
			t.Fatal(err)
		}
		c, reg, _ := metricsClient(t, leasehold.Config{
			Driver: sqlitetest.Open(t), Workers: workers, PollInterval: 20 * time.Millisecond, DisableWatcher: true,
		}, leaseholdprom.Options{QueueStatsInterval: -1, HandlerBuckets: buckets})
		if _, err := c.Insert(t.Context(), testArgs{Do: "complete"}, nil); err != nil {
			t.Fatal(err)
		}
		if err := c.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		eventually(t, "one handler duration observed", func() bool {
			return total(gather(t, reg, "leasehold_handler_duration_seconds")) == 1
		})
	}
}
