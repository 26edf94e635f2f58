package engine

import (
	"slices"
	"testing"
	"time"

	"github.com/leasehold/leasehold/leasetype"
)

// TestStopReleasesUnstartedLeaseInFlaggedQueue: in a queue that flags or
// reconciles expired leases (GiveUp writes nothing), Stop leaves to the
// watcher only the leases whose handler may have started, since that
// handler may have been cut off mid-effect. A lease whose handler never
// started did nothing: it is released, pending again at once, not left to
// expire and be flagged or reconciled for nothing.
func TestStopReleasesUnstartedLeaseInFlaggedQueue(t *testing.T) {
	t.Run("ClaimedWhileStopping", func(t *testing.T) {
		db := newFakeDB(rows(1)...)
		// The reply comes back once Stop has begun, however slow the
		// machine: the producer's stop waits for it.
		db.claimDelay = 2 * time.Second
		r := newRig(t, db, rigOpts{giveUp: giveUpNothing})
		waitFor(t, "a claim in flight", func() bool { claims, _ := db.calls(); return claims > 0 })
		r.stop(10 * time.Second)
		checkReleasedUnrun(t, r, 1)
	})
	t.Run("HeldNotStarted", func(t *testing.T) {
		// A lease held, its handler not started (as one still waiting for
		// a goroutine of the pool), when Stop cuts off what is left.
		row := &leasetype.JobRow{ID: 7, Kind: "k", Queue: "flagged", State: leasetype.StateProcessing, Attempt: 1, MaxAttempts: 3}
		db := newFakeDB()
		db.mu.Lock()
		db.held[row.ID] = true
		db.mu.Unlock()
		r := newRig(t, db, rigOpts{giveUp: giveUpNothing})
		l := r.exec.hold(nil, row, r.win.Clock.Now())
		if l == nil {
			t.Fatal("hold returned no lease")
		}
		r.exec.releaseRunning()
		waitFor(t, "the release reported", func() bool {
			return slices.Contains(r.rec.kinds(row.ID), leasetype.EventFinished)
		})
		checkReleasedUnrun(t, r, row.ID)
	})
}

// checkReleasedUnrun fails unless job id's lease was released, written and
// reported, without its handler starting.
func checkReleasedUnrun(t *testing.T, r *rig, id int64) {
	t.Helper()
	if p, ok := r.db.outcomes()[id]; !ok || p.Outcome != leasetype.OutcomeReleased {
		t.Fatalf("job %d after Stop: outcome %q written (%v); want released, not left to the watcher", id, p.Outcome, ok)
	}
	if got := r.rec.kinds(id); slices.Contains(got, leasetype.EventStarted) {
		t.Fatalf("job %d: events %v; its handler started", id, got)
	}
	releasedEvent(t, r, id)
}
