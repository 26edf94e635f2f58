package engine

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/leasehold/leasehold/leasetype"
)

// lingerRig is a completer of batches of 10 that lingers an hour once a
// statement has written 5 outcomes: long enough that a test sees every
// linger it did not expect as a timeout.
type lingerRig struct {
	t    *testing.T
	db   *fakeDB
	k    *Completer
	win  *Window
	leas *Leases
	next int64
}

func newLingerRig(t *testing.T) *lingerRig {
	r := &lingerRig{t: t, db: newFakeDB(), leas: NewLeases()}
	r.win = &Window{TTL: time.Minute, Margin: time.Second, Clock: NewClock()}
	r.k = NewCompleter(CompleterConfig{Finisher: r.db, Leases: r.leas, Window: r.win,
		Batch: 10, Linger: time.Hour, LingerFrom: 5, Emit: (&recorder{}).emit, Logger: discard})
	return r
}

// submit queues n completed outcomes of new held leases.
func (r *lingerRig) submit(n int) {
	for range n {
		r.next++
		row := &leasetype.JobRow{ID: r.next, Kind: "k", Queue: "q", State: leasetype.StateProcessing, Attempt: 1}
		submitCompleted(r.k, r.db, r.leas, r.win, row)
	}
}

// wantBatches waits until the Finish statements have written want.
func (r *lingerRig) wantBatches(want ...int) {
	r.t.Helper()
	waitFor(r.t, "finish statements", func() bool { return slices.Equal(r.db.finishBatches(), want) })
}

func TestCompleterWritesAtOnceBelowLingerFrom(t *testing.T) {
	r := newLingerRig(t)
	if err := r.k.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer r.k.Stop(context.Background())
	r.submit(1)
	r.wantBatches(1) // within waitFor's seconds, not the hour
	r.submit(4)
	waitFor(t, "five written", func() bool { return len(r.db.outcomes()) == 5 })
}

func TestCompleterLingersUnderLoad(t *testing.T) {
	r := newLingerRig(t)
	r.submit(6) // queued before Start: the first statement writes them at once
	if err := r.k.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.wantBatches(6)
	// That statement wrote LingerFrom or more: the next waits for a full
	// batch of 10 instead of writing these 3 now.
	r.submit(3)
	time.Sleep(50 * time.Millisecond)
	if got := r.db.finishBatches(); len(got) != 1 {
		t.Fatalf("finish statements %v: 3 outcomes written without lingering after a batch of 6", got)
	}
	r.submit(7)
	r.wantBatches(6, 10)
	// Still under load: one more lingers, and Stop writes it at once.
	r.submit(1)
	stopped := make(chan error, 1)
	go func() { stopped <- r.k.Stop(context.Background()) }()
	select {
	case err := <-stopped:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Stop waited for a lingering batch")
	}
	r.wantBatches(6, 10, 1)
	if r.leas.Len() != 0 {
		t.Fatalf("%d leases left after every outcome was written", r.leas.Len())
	}
}
