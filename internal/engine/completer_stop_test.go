package engine

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/statemachine"
	"github.com/leasehold/leasehold/leasetype"
)

// silentFinisher is a database that never answers: each Finish waits until
// its context ends.
type silentFinisher struct{}

func (silentFinisher) Finish(ctx context.Context, _ any, _ []*driver.FinishParams) ([]int64, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// TestStopWithFullQueueAndDatabaseDown: Stop returns within its release
// budget when the database does not answer and more outcomes wait than the
// completer's queue holds (its submitters blocked in Submit for room).
func TestStopWithFullQueueAndDatabaseDown(t *testing.T) {
	leases := NewLeases()
	win := &Window{TTL: time.Second, Margin: 100 * time.Millisecond, Clock: NewClock()}
	k := NewCompleter(CompleterConfig{Finisher: silentFinisher{}, Leases: leases, Window: win,
		Batch: 10, Emit: (&recorder{}).emit, Logger: discard})
	if err := k.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	var wg sync.WaitGroup
	for i := range 6 * 10 { // more than the queue (4 batches) and the batch in flight
		l := &Lease{Row: &leasetype.JobRow{ID: int64(i + 1), Kind: "k", Queue: "q",
			State: leasetype.StateProcessing, Attempt: 1}, window: win}
		l.renewedAt.Store(win.Clock.Now())
		leases.add(l)
		wg.Go(func() { k.Submit(l.finish("w1", statemachine.Ending{Outcome: leasetype.OutcomeCompleted})) })
	}
	waitFor(t, "the queue to fill", func() bool { return len(k.in) == cap(k.in) })
	ctx, cancel := context.WithCancel(t.Context())
	cancel() // as a client's is once its ShutdownTimeout has passed
	done := make(chan struct{})
	go func() { _ = k.Stop(ctx); close(done) }()
	select {
	case <-done:
	case <-time.After(2 * releaseTimeout):
		t.Fatalf("Stop still waiting after %v for a database that does not answer", 2*releaseTimeout)
	}
	wg.Wait()
}
