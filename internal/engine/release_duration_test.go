package engine

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/leasehold/leasehold/leasetype"
)

// releasedEvent returns the EventFinished of job id, which must be the
// release of its lease.
func releasedEvent(t *testing.T, r *rig, id int64) leasetype.Event {
	t.Helper()
	r.rec.mu.Lock()
	defer r.rec.mu.Unlock()
	for _, ev := range r.rec.evs {
		if ev.Kind == leasetype.EventFinished && ev.Job.ID == id {
			if ev.Outcome != leasetype.OutcomeReleased {
				t.Fatalf("job %d finished %s, want released", id, ev.Outcome)
			}
			return ev
		}
	}
	t.Fatalf("no EventFinished for job %d", id)
	return leasetype.Event{}
}

// TestReleaseAtStopCarriesHandlerRunTime: the release of a handler that
// Stop cut off reports how long the handler ran, at least as long as it
// had run before Stop was called, not zero as for a lease released
// unrun: those are the longest runs, and a zero hides them from whatever
// times handlers by their events.
func TestReleaseAtStopCarriesHandlerRunTime(t *testing.T) {
	db := newFakeDB(rows(1)...)
	began := make(chan time.Time, 1)
	r := newRig(t, db, rigOpts{run: func(ctx context.Context, _ *leasetype.JobRow) error {
		began <- time.Now()
		<-ctx.Done()
		return context.Cause(ctx)
	}})
	start := <-began
	time.Sleep(150 * time.Millisecond)
	ranBeforeStop := time.Since(start)
	r.stop(50 * time.Millisecond) // past it, the handler is cut off and its lease released
	if p := db.outcomes()[1]; p.Outcome != leasetype.OutcomeReleased {
		t.Fatalf("outcome %v after Stop, want released", p.Outcome)
	}
	if ev := releasedEvent(t, r, 1); ev.Duration < ranBeforeStop {
		t.Errorf("released after its handler ran %v: Duration %v, want at least that", ranBeforeStop, ev.Duration)
	}
}

// TestReleaseUnrunCarriesNoRunTime: a lease claimed while the client
// stops is released with no handler run, and its release's Duration stays
// zero.
func TestReleaseUnrunCarriesNoRunTime(t *testing.T) {
	db := newFakeDB(rows(1)...)
	db.claimDelay = 200 * time.Millisecond // the reply comes back once Stop has begun
	r := newRig(t, db, rigOpts{})
	waitFor(t, "a claim in flight", func() bool { claims, _ := db.calls(); return claims > 0 })
	r.stop(5 * time.Second)
	if p := db.outcomes()[1]; p.Outcome != leasetype.OutcomeReleased {
		t.Fatalf("outcome %v after Stop, want released", p.Outcome)
	}
	if got := r.rec.kinds(1); slices.Contains(got, leasetype.EventStarted) {
		t.Fatalf("events %v: the handler started", got)
	}
	if ev := releasedEvent(t, r, 1); ev.Duration != 0 {
		t.Errorf("released unrun: Duration %v, want 0", ev.Duration)
	}
}
