package bench

import (
	"context"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/leasehold/leasehold"
)

// The sustained inserter wakes every sustainBatchEvery and inserts the
// jobs due since its last batch (about 58 at 1,150/s), at most
// sustainMaxBatch in one statement when it has fallen behind.
const (
	sustainBatchEvery = 50 * time.Millisecond
	sustainMaxBatch   = 1000
)

// Latency histogram: bucket i holds latencies from histMin*histGrowth^i
// to histMin*histGrowth^(i+1) milliseconds (2% wide, from 10 µs to about
// 1,000 s), so that a window's quantiles are within 1% and windows merge.
const (
	histMin     = 0.01
	histGrowth  = 1.02
	histBuckets = 960
)

// sustainRun is the state one sustained run shares between its inserter,
// its handler and its sampler. The windows are allocated up front, so
// that the bench's own memory does not grow with the run.
type sustainRun struct {
	// base is when the run was made, and start the nanoseconds from it
	// to the run's start (set once the clients are up, read by every
	// goroutine of the run).
	base     time.Time
	start    atomic.Int64
	window   time.Duration
	rate     int
	holdAt   time.Duration
	holdFor  time.Duration
	windows  []sustainWindowCounts
	inserted atomic.Int64
	// heldPID is the backend of the held transaction while it is open.
	heldPID atomic.Int32
}

// sustainWindowCounts are one window's live counters.
type sustainWindowCounts struct {
	inserted atomic.Int64
	started  atomic.Int64
	maxNanos atomic.Int64
	hist     [histBuckets]atomic.Int32
}

func newSustainRun(o Options) *sustainRun {
	n := int((o.SustainFor + o.SustainWindow - 1) / o.SustainWindow)
	return &sustainRun{base: time.Now(), window: o.SustainWindow, rate: o.SustainRate,
		holdAt: o.HoldAt, holdFor: o.HoldFor, windows: make([]sustainWindowCounts, n+1)}
}

// begin starts the run's clock.
func (r *sustainRun) begin() { r.start.Store(int64(time.Since(r.base))) }

// now returns the nanoseconds since the run's start.
func (r *sustainRun) now() int64 { return int64(time.Since(r.base)) - r.start.Load() }

// at returns the time d after the run's start.
func (r *sustainRun) at(d time.Duration) time.Time {
	return r.base.Add(time.Duration(r.start.Load()) + d)
}

// windowAt returns the counters of the window holding t nanoseconds since
// the base (the spare last window takes what comes after the run).
func (r *sustainRun) windowAt(t int64) *sustainWindowCounts {
	i := min(max(int(t/int64(r.window)), 0), len(r.windows)-1)
	return &r.windows[i]
}

// started records a handler start for a job whose insert began at sent.
func (r *sustainRun) started(sent int64) {
	now := r.now()
	w := r.windowAt(now)
	w.started.Add(1)
	lat := now - sent
	w.hist[bucket(float64(lat)/1e6)].Add(1)
	for {
		m := w.maxNanos.Load()
		if lat <= m || w.maxNanos.CompareAndSwap(m, lat) {
			return
		}
	}
}

// bucket returns the histogram bucket of a latency in milliseconds.
func bucket(ms float64) int {
	if ms <= histMin {
		return 0
	}
	return min(int(math.Log(ms/histMin)/math.Log(histGrowth)), histBuckets-1)
}

// bucketValue is the middle of bucket i, in milliseconds.
func bucketValue(i int) float64 { return histMin * math.Pow(histGrowth, float64(i)+0.5) }

// insert inserts jobs at the run's rate until ctx is done: every
// sustainBatchEvery the jobs due by then, in one InsertMany.
func (r *sustainRun) insert(ctx context.Context, c *leasehold.Client) error {
	t := time.NewTicker(sustainBatchEvery)
	defer t.Stop()
	batch := make([]leasehold.InsertManyParams, 0, sustainMaxBatch)
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		due := int64(float64(r.rate) * time.Duration(r.now()).Seconds())
		n := min(due-r.inserted.Load(), sustainMaxBatch)
		if n <= 0 {
			continue
		}
		sent := r.now()
		batch = batch[:0]
		for range n {
			batch = append(batch, leasehold.InsertManyParams{Args: sustainArgs{Sent: sent}})
		}
		if _, err := c.InsertMany(ctx, nil, batch); err != nil {
			if ctx.Err() != nil {
				return nil // the run ended during the insert
			}
			return fmt.Errorf("insert: %w", err)
		}
		r.inserted.Add(n)
		r.windowAt(sent).inserted.Add(n)
	}
}
