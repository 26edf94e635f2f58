package engine

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/statemachine"
	"github.com/leasehold/leasehold/leasetype"
)

// settleRig is a completer of batches of 100 over a fakeDB that reads the
// history of its attempts (EndedReader).
type settleRig struct {
	t    *testing.T
	db   *fakeDB
	rec  *recorder
	k    *Completer
	leas *Leases
	win  *Window
}

func newSettleRig(t *testing.T, db *fakeDB) *settleRig {
	r := &settleRig{t: t, db: db, rec: &recorder{}, leas: NewLeases()}
	r.win = &Window{TTL: time.Minute, Margin: time.Second, Clock: NewClock()}
	r.k = NewCompleter(CompleterConfig{Finisher: db, Leases: r.leas, Window: r.win, Batch: 100,
		Ended: db, Emit: r.rec.emit, Logger: discard})
	return r
}

// lease returns a held lease of w1 on attempt 1 of job id; held says
// whether the fakeDB still has it.
func (r *settleRig) lease(id int64, held bool) *Lease {
	r.db.mu.Lock()
	r.db.held[id] = held
	r.db.mu.Unlock()
	row := &leasetype.JobRow{ID: id, Kind: "k", Queue: "q", State: leasetype.StateProcessing, Attempt: 1, LeaseOwner: "w1"}
	l := &Lease{Row: row, window: r.win}
	l.renewedAt.Store(r.win.Clock.Now())
	r.leas.add(l)
	return l
}

// submitCompleted queues the completed outcomes of n new held leases,
// jobs from+1 to from+n.
func (r *settleRig) submitCompleted(from, n int) {
	for i := range n {
		l := r.lease(int64(from+i+1), true)
		r.k.Submit(l.finish("w1", statemachine.Ending{Outcome: leasetype.OutcomeCompleted}))
	}
}

// submitAfterTx queues the safety write after a CompleteTx of a new lease
// on job id (retried, as Classify makes ErrCompleteTxRolledBack), the
// lease already gone from the fakeDB.
func (r *settleRig) submitAfterTx(id int64) {
	it := r.lease(id, false).finish("w1", statemachine.Ending{Outcome: leasetype.OutcomeRetried, Delay: time.Second,
		Error: ErrCompleteTxRolledBack.Error()})
	it.afterTx = true
	r.k.Submit(it)
}

func (r *settleRig) start() {
	if err := r.k.Start(context.Background()); err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { _ = r.k.Stop(context.Background()) })
}

// events returns the recorded events of kind k.
func (r *settleRig) events(k leasetype.EventKind) []leasetype.Event {
	r.rec.mu.Lock()
	defer r.rec.mu.Unlock()
	var out []leasetype.Event
	for _, ev := range r.rec.evs {
		if ev.Kind == k {
			out = append(out, ev)
		}
	}
	return out
}

// completed counts what Stats.Completed counts: EventFinished of outcome
// completed.
func (r *settleRig) completed() int {
	n := 0
	for _, ev := range r.events(leasetype.EventFinished) {
		if ev.Outcome == leasetype.OutcomeCompleted {
			n++
		}
	}
	return n
}

// TestRetriedBatchFirstTryCommittedIsFinished: a finish statement of 50
// completions commits but its reply is lost; the retry's fence matches
// nothing. The history the first try wrote says the completions applied:
// each is reported finished (counted in Stats.Completed), by one read for
// the batch. A normal finish after it reads nothing.
func TestRetriedBatchFirstTryCommittedIsFinished(t *testing.T) {
	db := newFakeDB()
	db.lostReplies = 1
	r := newSettleRig(t, db)
	r.submitCompleted(0, 50) // queued before Start: one statement
	r.start()
	waitFor(t, "50 completions reported", func() bool { return r.completed() == 50 })
	if n := len(r.events(leasetype.EventFinishFailed)); n != 1 {
		t.Fatalf("%d failed finish statements; want the 1 whose reply was lost", n)
	}
	r.submitCompleted(50, 3)
	waitFor(t, "53 completions reported", func() bool { return r.completed() == 53 })
	if err := r.k.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(r.events(leasetype.EventFenceRefused)); n != 0 {
		t.Fatalf("%d outcomes reported refused; want none", n)
	}
	if got := db.reads(); !slices.Equal(got, []int{50}) {
		t.Fatalf("history reads of %v leases; want one read of the 50 unapplied, none for the normal finish", got)
	}
}

// TestRetriedBatchTakenOverIsRefused: a finish statement of 50
// completions fails without applying, and their leases are taken over
// before the retry, whose fence matches nothing: each outcome is reported
// refused (Stats.FinishRefused), none finished, by one read.
func TestRetriedBatchTakenOverIsRefused(t *testing.T) {
	db := newFakeDB()
	db.takeOverOnFail = 1
	r := newSettleRig(t, db)
	r.submitCompleted(0, 50)
	r.start()
	waitFor(t, "50 refusals reported", func() bool { return len(r.events(leasetype.EventFenceRefused)) == 50 })
	if err := r.k.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := len(r.events(leasetype.EventFinished)); n != 0 {
		t.Fatalf("%d outcomes reported finished; want none: their leases were taken over", n)
	}
	if got := db.reads(); !slices.Equal(got, []int{50}) {
		t.Fatalf("history reads of %v leases; want one read of 50", got)
	}
}

// TestAfterTxRefusedRolledBackIsRefused: two safety writes after
// CompleteTx are refused. Job 1's transaction committed (its attempt
// ended completed): reported finished, completed. Job 2's rolled back and
// its lease was taken over (ended lease_expired): reported refused, not
// completed.
func TestAfterTxRefusedRolledBackIsRefused(t *testing.T) {
	db := newFakeDB()
	db.ended(driver.EndedAttempt{ID: 1, Attempt: 1, Owner: "w1", Outcome: leasetype.OutcomeCompleted})
	db.ended(driver.EndedAttempt{ID: 2, Attempt: 1, Owner: "w1", Outcome: leasetype.OutcomeLeaseExpired})
	r := newSettleRig(t, db)
	r.submitAfterTx(1)
	r.submitAfterTx(2)
	r.start()
	waitFor(t, "both outcomes reported", func() bool { return len(r.rec.kinds(1))+len(r.rec.kinds(2)) == 2 })
	if err := r.k.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	fin := r.events(leasetype.EventFinished)
	if len(fin) != 1 || fin[0].Job.ID != 1 || fin[0].Outcome != leasetype.OutcomeCompleted || fin[0].State != leasetype.StateCompleted {
		t.Fatalf("finished events %+v; want job 1's alone, completed", fin)
	}
	if got := r.rec.kinds(2); !slices.Equal(got, []leasetype.EventKind{leasetype.EventFenceRefused}) {
		t.Fatalf("job 2's events %v; want fence refused: its CompleteTx rolled back and its lease was lost", got)
	}
	if got := db.reads(); !slices.Equal(got, []int{2}) {
		t.Fatalf("history reads of %v leases; want one read of 2", got)
	}
}

// TestSettleReadFailingReportsAsBefore: when the history cannot be read,
// outcomes are reported as without a reader: a refused write after
// CompleteTx as completed, an unapplied retried outcome not at all.
func TestSettleReadFailingReportsAsBefore(t *testing.T) {
	db := newFakeDB()
	db.endedErr = errors.New("read failed")
	db.lostReplies = 1
	r := newSettleRig(t, db)
	r.submitCompleted(0, 1)
	r.start()
	waitFor(t, "the history read", func() bool { return len(db.reads()) == 1 })
	r.submitAfterTx(2)
	waitFor(t, "the completion in a transaction", func() bool { return r.completed() == 1 })
	if err := r.k.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := r.rec.kinds(1); len(got) != 0 {
		t.Fatalf("job 1's events %v; want none without its history", got)
	}
	if got := r.rec.kinds(2); !slices.Equal(got, []leasetype.EventKind{leasetype.EventFinished}) {
		t.Fatalf("job 2's events %v; want finished (completed) without its history", got)
	}
}
