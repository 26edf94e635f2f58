package engine

import (
	"context"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/statemachine"
	"github.com/leasehold/leasehold/leasetype"
)

// submitRetried queues the retried outcome of a new held lease on job id,
// its cancel requested (in the fakeDB) when cancel is set.
func (r *settleRig) submitRetried(id int64, cancel bool) {
	l := r.lease(id, true)
	r.db.mu.Lock()
	r.db.cancelAsked[id] = cancel
	r.db.mu.Unlock()
	r.k.Submit(l.finish("w1", statemachine.Ending{Outcome: leasetype.OutcomeRetried, Delay: time.Second, Error: "boom"}))
}

// finishedBy returns the EventFinished of each job, by id.
func (r *settleRig) finishedBy() map[int64]leasetype.Event {
	out := map[int64]leasetype.Event{}
	for _, ev := range r.events(leasetype.EventFinished) {
		out[ev.Job.ID] = ev
	}
	return out
}

// reported counts the outcomes reported finished or refused.
func (r *settleRig) reported() int {
	return len(r.events(leasetype.EventFinished)) + len(r.events(leasetype.EventFenceRefused))
}

// checkCancelledReported checks the EventFinished of jobs 1 (cancel
// requested) and 2 (not): cancelled and retried.
func (r *settleRig) checkCancelledReported() {
	r.t.Helper()
	evs := r.finishedBy()
	if ev := evs[1]; ev.Outcome != leasetype.OutcomeCancelled || ev.State != leasetype.StateCancelled {
		r.t.Errorf("job 1, retried with its cancel requested: EventFinished %s, state %s; want cancelled, cancelled",
			ev.Outcome, ev.State)
	}
	if ev := evs[2]; ev.Outcome != leasetype.OutcomeRetried || ev.State != leasetype.StatePending {
		r.t.Errorf("job 2, retried: EventFinished %s, state %s; want retried, pending", ev.Outcome, ev.State)
	}
	if n := len(r.events(leasetype.EventFenceRefused)); n != 0 {
		r.t.Errorf("%d outcomes reported refused; want none", n)
	}
}

// TestCancelledWriteReportedCancelled: a retried outcome whose write the
// cancel rule turned into cancelled (Finish reports it so) is an
// EventFinished of outcome cancelled and state cancelled, what its
// history row records; one without a cancel request is reported retried.
func TestCancelledWriteReportedCancelled(t *testing.T) {
	r := newSettleRig(t, newFakeDB())
	r.submitRetried(1, true)
	r.submitRetried(2, false)
	r.start()
	waitFor(t, "both outcomes reported", func() bool { return r.reported() == 2 })
	if err := r.k.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.checkCancelledReported()
}

// TestRetriedBatchFirstTryCancelledIsCancelled: the same batch, whose
// first statement committed with its reply lost: the retry's fence
// matches nothing, and the history rows the first try wrote (ended
// cancelled for job 1, retried for job 2) report each as it applied.
func TestRetriedBatchFirstTryCancelledIsCancelled(t *testing.T) {
	db := newFakeDB()
	db.lostReplies = 1
	r := newSettleRig(t, db)
	r.submitRetried(1, true)
	r.submitRetried(2, false)
	r.start()
	waitFor(t, "both outcomes reported", func() bool { return r.reported() == 2 })
	if err := r.k.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	r.checkCancelledReported()
}
