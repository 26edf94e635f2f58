package maintenance

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/leasetype"
)

// countsWriter keeps every count the recorder writes.
type countsWriter struct {
	mu     sync.Mutex
	counts []leasetype.ThroughputCount
}

// RecordThroughput implements ThroughputWriter.
func (w *countsWriter) RecordThroughput(_ context.Context, p *driver.ThroughputParams) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.counts = append(w.counts, p.Counts...)
	return nil
}

// TestRecorderFlushesAtStopPastItsContext: what was counted since the last
// flush is written at Stop even when Stop's context is done, as a client's
// is once its ShutdownTimeout has passed.
func TestRecorderFlushesAtStopPastItsContext(t *testing.T) {
	w := &countsWriter{}
	var tally Tally
	r := NewRecorder(w, &tally, time.Hour, discard)
	if err := r.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	tally.Add("q", leasetype.OutcomeCompleted)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	_ = r.Stop(ctx)
	w.mu.Lock()
	defer w.mu.Unlock()
	var jobs int64
	for _, c := range w.counts {
		jobs += c.Jobs
	}
	if jobs != 1 {
		t.Fatalf("counts written by Stop with a done context: %d jobs, want 1", jobs)
	}
}

// slowWriter is a countsWriter whose writes take delay; entered is
// closed as the first one begins.
type slowWriter struct {
	countsWriter
	delay   time.Duration
	entered chan struct{}
	once    sync.Once
}

// RecordThroughput implements ThroughputWriter.
func (w *slowWriter) RecordThroughput(ctx context.Context, p *driver.ThroughputParams) error {
	w.once.Do(func() { close(w.entered) })
	time.Sleep(w.delay)
	return w.countsWriter.RecordThroughput(ctx, p)
}

// TestRecorderSecondStopWaitsForTheFirst: a Stop called while the first
// is writing the last flush returns only once that write is done, as a
// service's second Stop waits for the first.
func TestRecorderSecondStopWaitsForTheFirst(t *testing.T) {
	w := &slowWriter{delay: 200 * time.Millisecond, entered: make(chan struct{})}
	var tally Tally
	r := NewRecorder(w, &tally, time.Hour, discard)
	tally.Add("q", leasetype.OutcomeCompleted)
	first := make(chan error, 1)
	go func() { first <- r.Stop(t.Context()) }()
	<-w.entered
	_ = r.Stop(t.Context())
	w.mu.Lock()
	written := len(w.counts)
	w.mu.Unlock()
	if written != 1 {
		t.Errorf("counts written when the second Stop returned: %d, want 1", written)
	}
	<-first
}

// silentWriter is a database that does not answer: each call waits until
// its context ends. calls counts them.
type silentWriter struct{ calls atomic.Int32 }

// RecordThroughput implements ThroughputWriter.
func (w *silentWriter) RecordThroughput(ctx context.Context, _ *driver.ThroughputParams) error {
	w.calls.Add(1)
	<-ctx.Done()
	return ctx.Err()
}

// TestRecorderFinalFlushOnceByItsDeadline: with the database not
// answering, the last flush gives up at FinalBy's deadline (here passed,
// so after minFinalFlush), and a second Stop (as the client's settling
// makes) does not try it again. The recorder is not started, so that no
// periodic flush meets the count.
func TestRecorderFinalFlushOnceByItsDeadline(t *testing.T) {
	w := &silentWriter{}
	var tally Tally
	r := NewRecorder(w, &tally, time.Hour, discard)
	r.FinalBy = func() time.Time { return time.Now().Add(-time.Second) }
	tally.Add("q", leasetype.OutcomeCompleted)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	start := time.Now()
	_ = r.Stop(ctx)
	_ = r.Stop(ctx)
	if took := time.Since(start); took > finalFlushBudget {
		t.Errorf("two Stops took %v with a passed deadline, want about %v", took, minFinalFlush)
	}
	if n := w.calls.Load(); n != 1 {
		t.Errorf("RecordThroughput called %d times by two Stops, want 1", n)
	}
}
