package engine

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/leasetype"
)

// decideLease returns a lease of w1 on attempt 1 of job 1 whose context
// ended with cause, or is still live when cause is nil.
func decideLease(cause error) *Lease {
	row := &leasetype.JobRow{ID: 1, Kind: "k", Queue: "q", State: leasetype.StateProcessing, Attempt: 1,
		LeaseOwner: "w1", MaxAttempts: 3}
	l := &Lease{Row: row}
	l.ctx, l.cancel = context.WithCancelCause(context.Background())
	if cause != nil {
		l.cancel(cause)
	}
	return l
}

// TestDecideLeaseGivenUpOrLost: every way the database's word (lostInDB),
// the watchdog's (expiredLocally) and the handler's (an error wrapping
// ErrLeaseLost, as CheckLease returns past the safe window) combine.
// Nothing is written only when the database said the lease is lost, or
// when the queue's policy leaves a given-up lease to the watcher; a lease
// the worker stopped relying on, by the watchdog or by the handler's own
// check, ends as the give-up's ending.
func TestDecideLeaseGivenUpOrLost(t *testing.T) {
	lostErr := fmt.Errorf("%w: job 1 attempt 1: safe window passed 3ms ago", leasetype.ErrLeaseLost)
	for _, lostInDB := range []bool{false, true} {
		for _, expired := range []bool{false, true} {
			for _, errLost := range []bool{false, true} {
				for _, writes := range []bool{true, false} {
					name := fmt.Sprintf("lostInDB=%v/expiredLocally=%v/errLeaseLost=%v/giveUpWrites=%v", lostInDB, expired, errLost, writes)
					t.Run(name, func(t *testing.T) {
						var cause error
						if lostInDB || expired {
							cause = leasetype.ErrLeaseLost // the heartbeater's and the watchdog's cause
						}
						l := decideLease(cause)
						l.lostInDB.Store(lostInDB)
						l.expiredLocally.Store(expired)
						err := errors.New("handler failed")
						if errLost {
							err = lostErr
						}
						giveUp := giveUpLeaseLost
						if !writes {
							giveUp = giveUpNothing
						}
						e := NewExecutor(ExecutorConfig{Owner: "w1", Classify: classifyRetry, GiveUp: giveUp})
						var want leasetype.Outcome // none: nothing written
						switch {
						case lostInDB:
						case expired || errLost:
							if writes {
								want = leasetype.OutcomeLeaseLost
							}
						default:
							want = leasetype.OutcomeRetried
						}
						var got leasetype.Outcome
						if item := e.decide(l, err); item != nil {
							got = item.p.Outcome
						}
						if got != want {
							t.Fatalf("decided %q, want %q", got, want)
						}
					})
				}
			}
		}
	}
}

// TestDecideCancelledBeforeLeaseCheck: a handler cut off by an operator's
// cancel that returns its lease check's ErrLeaseLost ends cancelled, as
// the operator asked.
func TestDecideCancelledBeforeLeaseCheck(t *testing.T) {
	l := decideLease(leasetype.ErrJobCancelled)
	e := NewExecutor(ExecutorConfig{Owner: "w1", Classify: classifyRetry, GiveUp: giveUpLeaseLost})
	item := e.decide(l, fmt.Errorf("%w: safe window passed", leasetype.ErrLeaseLost))
	if item == nil || item.p.Outcome != leasetype.OutcomeCancelled {
		t.Fatalf("decided %+v, want cancelled", item)
	}
}

// waitThen is a handler that runs until its context ends, then returns
// what ret makes of that context.
func waitThen(ret func(ctx context.Context) error) func(ctx context.Context, row *leasetype.JobRow) error {
	return func(ctx context.Context, _ *leasetype.JobRow) error {
		<-ctx.Done()
		return ret(ctx)
	}
}

// pollUsable is a handler that checks its lease every millisecond, as
// CheckLease before each step, and returns the check's error: it sees the
// safe window pass before the watchdog, which wakes when the window ends.
func pollUsable(ctx context.Context, _ *leasetype.JobRow) error {
	for {
		if err := FromContext(ctx).Usable(); err != nil {
			return err
		}
		time.Sleep(time.Millisecond)
	}
}

// TestGivenUpLeaseHandlerErrorKeepsPolicy: heartbeats fail and the lease
// passes its safe window. Whatever the handler returns (ctx.Err, the
// context's cause, which wraps ErrLeaseLost, or its lease check's error,
// also before the watchdog looks), the give-up's ending is written:
// lease_lost with budget left; nothing in a queue that flags or
// reconciles expired leases. The lease does not wait in processing for
// its TTL and the watcher.
func TestGivenUpLeaseHandlerErrorKeepsPolicy(t *testing.T) {
	for _, tc := range []struct {
		name   string
		run    func(ctx context.Context, row *leasetype.JobRow) error
		giveUp GiveUp
		want   leasetype.Outcome // none: nothing written
	}{
		{"ctx.Err", waitThen(func(ctx context.Context) error { return ctx.Err() }), nil, leasetype.OutcomeLeaseLost},
		{"Cause", waitThen(context.Cause), nil, leasetype.OutcomeLeaseLost},
		{"Usable", waitThen(func(ctx context.Context) error { return FromContext(ctx).Usable() }), nil, leasetype.OutcomeLeaseLost},
		{"UsableBeforeWatchdog", pollUsable, nil, leasetype.OutcomeLeaseLost},
		{"FlaggedQueue", waitThen(context.Cause), giveUpNothing, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := newFakeDB(rows(1)...)
			db.hbErr = errDown
			started := make(chan struct{})
			r := newRig(t, db, rigOpts{ttl: 600 * time.Millisecond, margin: 200 * time.Millisecond, interval: 200 * time.Millisecond,
				giveUp: tc.giveUp, run: func(ctx context.Context, row *leasetype.JobRow) error {
					close(started)
					return tc.run(ctx, row)
				}})
			<-started
			waitFor(t, "the handler's end and its lease dropped", func() bool { return r.exec.Running() == 0 && r.leas.Len() == 0 })
			out, written := db.outcomes()[1]
			switch {
			case tc.want == "" && written:
				t.Fatalf("wrote %q; want nothing, the lease left to the watcher", out.Outcome)
			case tc.want != "" && out.Outcome != tc.want:
				t.Fatalf("wrote %v %q; want %q (events %v)", written, out.Outcome, tc.want, r.rec.kinds(1))
			}
		})
	}
}

// commitCompleteTx does what a CompleteTx of the lease in ctx does, its
// transaction committed when committed: the job completed by this attempt
// of w1, its lease gone.
func commitCompleteTx(ctx context.Context, db *fakeDB, row *leasetype.JobRow, committed bool) {
	if committed {
		db.mu.Lock()
		delete(db.held, row.ID)
		db.mu.Unlock()
		db.ended(driver.EndedAttempt{ID: row.ID, Attempt: row.Attempt, Owner: "w1", Outcome: leasetype.OutcomeCompleted})
	}
	FromContext(ctx).MarkCompletedIn(&struct{ tx int }{})
}

// finishedAs returns the outcomes of the EventFinished of job id.
func (r *rig) finishedAs(id int64) []leasetype.Outcome {
	r.rec.mu.Lock()
	defer r.rec.mu.Unlock()
	var out []leasetype.Outcome
	for _, ev := range r.rec.evs {
		if ev.Kind == leasetype.EventFinished && ev.Job != nil && ev.Job.ID == id {
			out = append(out, ev.Outcome)
		}
	}
	return out
}

// TestStopAfterCompleteTx: a handler completes its job with CompleteTx,
// then is still running when Stop's wait ends. A committed completion is
// reported finished, completed, and never refused, both when Stop releases
// the lease (the release refused) and when the queue leaves it to the
// watcher (nothing written); a transaction that rolled back is released,
// or left to the watcher, as without CompleteTx.
func TestStopAfterCompleteTx(t *testing.T) {
	for _, tc := range []struct {
		name      string
		giveUp    GiveUp
		committed bool
		written   leasetype.Outcome // none: nothing written
		finished  []leasetype.Outcome
	}{
		{"Released/Committed", nil, true, "", []leasetype.Outcome{leasetype.OutcomeCompleted}},
		{"Released/RolledBack", nil, false, leasetype.OutcomeReleased, []leasetype.Outcome{leasetype.OutcomeReleased}},
		{"LeftToWatcher/Committed", giveUpNothing, true, "", []leasetype.Outcome{leasetype.OutcomeCompleted}},
		{"LeftToWatcher/RolledBack", giveUpNothing, false, "", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := newFakeDB(rows(1)...)
			started := make(chan struct{})
			r := newRig(t, db, rigOpts{giveUp: tc.giveUp, ended: true, run: func(ctx context.Context, row *leasetype.JobRow) error {
				commitCompleteTx(ctx, db, row, tc.committed)
				close(started)
				<-ctx.Done() // still busy after the commit when Stop's wait ends
				return ctx.Err()
			}})
			<-started
			r.stop(50 * time.Millisecond)
			if out, ok := db.outcomes()[1]; out.Outcome != tc.written {
				t.Errorf("wrote %v %q; want %q", ok, out.Outcome, tc.written)
			}
			if got := r.finishedAs(1); fmt.Sprint(got) != fmt.Sprint(tc.finished) {
				t.Errorf("finished as %v; want %v (events %v)", got, tc.finished, r.rec.kinds(1))
			}
			if n := r.rec.count(leasetype.EventFenceRefused); n != 0 {
				t.Errorf("%d fence refused; want none", n)
			}
		})
	}
}

// TestLeaseLostAfterCommittedCompleteTx: a handler completes its job with
// CompleteTx, its transaction commits, and it then returns its lease
// check's ErrLeaseLost. The completion is reported finished, completed:
// through the refusal of the give-up's write, or, in a queue that leaves
// the lease to the watcher, by the attempt's history alone.
func TestLeaseLostAfterCommittedCompleteTx(t *testing.T) {
	for _, tc := range []struct {
		name   string
		giveUp GiveUp
	}{{"GiveUpWrites", nil}, {"LeftToWatcher", giveUpNothing}} {
		t.Run(tc.name, func(t *testing.T) {
			db := newFakeDB(rows(1)...)
			r := newRig(t, db, rigOpts{giveUp: tc.giveUp, ended: true, run: func(ctx context.Context, row *leasetype.JobRow) error {
				commitCompleteTx(ctx, db, row, true)
				return fmt.Errorf("%w: job %d: safe window passed", leasetype.ErrLeaseLost, row.ID)
			}})
			waitFor(t, "the completion reported", func() bool { return len(r.finishedAs(1)) > 0 })
			waitFor(t, "the lease dropped", func() bool { return r.leas.Len() == 0 })
			if got := r.finishedAs(1); len(got) != 1 || got[0] != leasetype.OutcomeCompleted {
				t.Fatalf("finished as %v; want completed once (events %v)", got, r.rec.kinds(1))
			}
			if out, ok := db.outcomes()[1]; ok {
				t.Fatalf("wrote %q over a completed job", out.Outcome)
			}
		})
	}
}
