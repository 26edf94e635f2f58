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

func (silentFinisher) Finish(ctx context.Context, _ any, _ []*driver.FinishParams) ([]driver.FinishResult, error) {
	<-ctx.Done()
	return nil, ctx.Err()
}

// enteredFinisher is a silentFinisher that closes entered at its first
// Finish: the flusher then holds its batch and takes nothing more from
// the queue.
type enteredFinisher struct {
	silentFinisher
	once    sync.Once
	entered chan struct{}
}

func (f *enteredFinisher) Finish(ctx context.Context, tx any, ps []*driver.FinishParams) ([]driver.FinishResult, error) {
	f.once.Do(func() { close(f.entered) })
	return f.silentFinisher.Finish(ctx, tx, ps)
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

// TestExecutorStopWithFullQueueAndDatabaseDown: the executor's Stop, which
// releases the leases of handlers it cut off, returns within the release
// budget when the database does not answer and there are more releases
// than the completer's queue holds; the completer's Stop after it shares
// that budget instead of starting its own.
func TestExecutorStopWithFullQueueAndDatabaseDown(t *testing.T) {
	const n = 600 // more than the rig's queue (4 batches of 100) and the batch in flight
	db := newFakeDB(rows(n)...)
	r := newRig(t, db, rigOpts{ttl: time.Second, margin: 200 * time.Millisecond, interval: 300 * time.Millisecond,
		workers: n, run: func(ctx context.Context, _ *leasetype.JobRow) error { <-ctx.Done(); return ctx.Err() }})
	waitFor(t, "every handler to run", func() bool { return r.exec.Running() == n })
	db.mu.Lock()
	db.silent = true
	db.mu.Unlock()
	ctx, cancel := context.WithTimeout(t.Context(), 100*time.Millisecond)
	defer cancel()
	_ = r.prod.Stop(ctx)
	start := time.Now()
	done := make(chan struct{})
	go func() { _ = r.exec.Stop(ctx); _ = r.comp.Stop(ctx); close(done) }()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatalf("Stop still waiting after 5 s for a database that does not answer (release budget about 1 s)")
	}
	if took := time.Since(start); took > 4*time.Second {
		t.Errorf("executor and completer stopped in %v, want one release budget (about 1 s) after the shutdown timeout", took)
	}
}

// TestSubmitOrDropWithFullQueue: with the queue full and the database not
// answering, SubmitOrDrop (the release of a lease claimed while the client
// stops) returns at once and reports the release dropped, where Submit
// would wait for room.
func TestSubmitOrDropWithFullQueue(t *testing.T) {
	leases := NewLeases()
	win := &Window{TTL: time.Second, Margin: 100 * time.Millisecond, Clock: NewClock()}
	rec := &recorder{}
	fin := &enteredFinisher{entered: make(chan struct{})}
	k := NewCompleter(CompleterConfig{Finisher: fin, Leases: leases, Window: win,
		Batch: 10, Emit: rec.emit, Logger: discard})
	if err := k.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { k.giveUp(); _ = k.Stop(context.Background()) })
	lease := func(id int64) *Lease {
		l := &Lease{Row: &leasetype.JobRow{ID: id, Kind: "k", Queue: "q", State: leasetype.StateProcessing, Attempt: 1}, window: win}
		l.renewedAt.Store(win.Clock.Now())
		leases.add(l)
		return l
	}
	n := int64(1)
	k.Submit(lease(n).finish("w1", statemachine.Ending{Outcome: leasetype.OutcomeCompleted}))
	select { // the flusher holds the first batch; the queue then fills with the rest
	case <-fin.entered:
	case <-time.After(5 * time.Second):
		t.Fatal("the flusher never wrote its first batch")
	}
	for len(k.in) < cap(k.in) {
		n++
		k.Submit(lease(n).finish("w1", statemachine.Ending{Outcome: leasetype.OutcomeCompleted}))
	}
	done := make(chan struct{})
	go func() {
		k.SubmitOrDrop(lease(n+1).finish("w1", statemachine.Ending{Outcome: leasetype.OutcomeReleased}))
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("SubmitOrDrop waited for room in a full queue")
	}
	if got := rec.kinds(n + 1); len(got) != 1 || got[0] != leasetype.EventOutcomeDropped {
		t.Errorf("events of the release = %v, want it dropped", got)
	}
}
