package maintenance

import (
	"context"
	"sync"
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
