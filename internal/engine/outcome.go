package engine

import (
	"context"
	"errors"
	"time"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/statemachine"
	"github.com/leasehold/leasehold/leasetype"
)

// Classify turns a handler's error (never nil) into the attempt's result:
// the client's policy of permanent errors, snoozes, cancels and retries.
type Classify func(row *leasetype.JobRow, err error) statemachine.Ending

// GiveUp is the ending of an attempt whose lease the worker gave up
// because it could not renew it in time (the watchdog, or a handler that
// stopped on ErrLeaseLost before the database said so), or false when the
// worker must write nothing and leave the job to the watcher once the
// lease has run out: in a queue whose expired leases are flagged stuck or
// reconciled, where the handler may have been cut off mid-effect. Stop
// asks it too, of a lease whose handler it cancels: false leaves that
// lease to the watcher instead of releasing it.
type GiveUp func(row *leasetype.JobRow) (statemachine.Ending, bool)

// Emit receives the engine's events. It must not block.
type Emit func(leasetype.Event)

// ErrCompleteTxRolledBack is the error an attempt is classified with when
// its handler returned nil after a CompleteTx whose transaction did not
// commit: the job is not done, and the attempt is charged like any
// failure.
var ErrCompleteTxRolledBack = errors.New("handler returned nil but its CompleteTx transaction did not commit")

// ErrHandlerExited is the error of an attempt whose handler ended its
// goroutine without returning (runtime.Goexit, as t.FailNow does): a
// failure like any other, retried or failed by the retry policy.
var ErrHandlerExited = errors.New("handler ended its goroutine without returning (runtime.Goexit, as t.FailNow does)")

// finishItem is an outcome waiting for the completer.
type finishItem struct {
	p driver.FinishParams
	// lease is the lease the outcome belongs to, dropped from the lease
	// set once the outcome is written (or given up).
	lease *Lease
	// afterTx: the handler already completed the job with CompleteTx; this
	// write only reschedules it if that transaction rolled back. Its
	// refusal is expected when the completion committed, but it is also
	// that of a lease lost while the transaction rolled back: the
	// completer tells the two apart by the attempt's history row (settle).
	afterTx bool
	// ran is how long the handler ran; err what it returned.
	ran time.Duration
	err error
}

// finish returns the lease's outcome item, set to the ending e. Only the caller
// that set finalized may call it.
func (l *Lease) finish(owner string, e statemachine.Ending) *finishItem {
	l.fin = finishItem{lease: l}
	l.fin.p = driver.FinishParams{ID: l.Row.ID, Owner: owner, Attempt: l.Row.Attempt}
	l.fin.set(e)
	return &l.fin
}

// set makes the item's fenced write the transition of the ending e: the
// one place where the engine turns an outcome into what the driver
// applies.
func (it *finishItem) set(e statemachine.Ending) {
	it.p.Transition = statemachine.Finish(e)
}

// event returns the item's outcome event of kind k.
func (it *finishItem) event(k leasetype.EventKind) leasetype.Event {
	return leasetype.Event{Kind: k, Job: it.lease.Row, Outcome: it.p.Outcome, State: it.p.State, Duration: it.ran, Err: it.err}
}

// cancelledEvent returns the EventFinished of an item whose write a
// cancel request turned into cancelled (driver.FinishResult.Cancelled):
// the outcome its attempt's history row records, state cancelled.
func (it *finishItem) cancelledEvent() leasetype.Event {
	ev := it.event(leasetype.EventFinished)
	ev.Outcome, ev.State = it.p.OutcomeWhenCancelled(), leasetype.StateCancelled
	return ev
}

// decide turns a handler's result into the fenced write to make, or nil
// when there is nothing this client may write.
//
// Only the database tells that a lease is someone else's (lostInDB: a
// heartbeat found it gone, or a CompleteTx was refused); then nothing is
// written for a handler that failed. One that returned nil has its
// completion written, which the fence refuses and which is reported
// refused (the late write a fenced queue exists to stop), unless a
// CompleteTx of the lease was refused already (refused): that refusal
// is the attempt's one event, reported when the handler returns
// (Executor.ended, refusedInTx), and a second one would end the attempt
// twice. A lease
// the worker stopped relying on is another matter: the watchdog gave it
// up (expiredLocally), or the handler returned an error wrapping
// ErrLeaseLost (CheckLease past the safe window, possibly just
// before the watchdog; context.Cause of a lease given up; FenceTx finding
// it expired) while the database may still hold it. Its ending is the
// give-up's (GiveUp), written through the fence like any other: the retry
// budget and the queue's policy hold, and the job does not wait in
// processing for its TTL and the watcher. A write for a lease taken over
// meanwhile is refused by the fence and reported refused, not finished.
func (e *Executor) decide(l *Lease, err error) *finishItem {
	item := l.finish(e.cfg.Owner, statemachine.Ending{})
	item.err = err
	cause := context.Cause(l.ctx)
	// After a CompleteTx, whatever the handler returned, this write is a
	// safety net for a transaction that rolled back; its refusal is
	// reported by the attempt's history row, completed or not (settle).
	item.afterTx = l.completedInTx.Load()
	switch {
	case l.refused.Load():
		// A CompleteTx was refused, reported by ended: nothing more, even
		// for a nil (a completion would only be refused and reported again).
		return nil
	case err == nil && item.afterTx:
		item.set(e.cfg.Classify(l.Row, ErrCompleteTxRolledBack))
	case err == nil:
		item.set(statemachine.Ending{Outcome: leasetype.OutcomeCompleted})
	case l.lostInDB.Load():
		return nil // the lease is someone else's now: nothing to write
	case errors.Is(cause, leasetype.ErrJobCancelled):
		item.set(statemachine.Ending{Outcome: leasetype.OutcomeCancelled, Error: "cancelled by operator"})
	case l.expiredLocally.Load(), says(err, leasetype.ErrLeaseLost):
		end, ok := e.cfg.GiveUp(l.Row)
		if !ok {
			return nil // the lease runs out; the watcher applies the queue's policy
		}
		item.set(end)
	case errors.Is(cause, ErrShutdown):
		item.set(statemachine.Ending{Outcome: leasetype.OutcomeReleased})
	default:
		item.set(e.cfg.Classify(l.Row, err))
	}
	return item
}

// LostInDB reports whether the database said the lease is no longer
// this client's: a heartbeat found it gone, or a CompleteTx was refused.
// A lease past its safe window on the client's clock alone is not lost
// here: the database's fence decides that.
func (l *Lease) LostInDB() bool { return l.lostInDB.Load() }

// CompletedInTx reports whether a CompleteTx of the lease succeeded (in a
// transaction that may since have committed or rolled back).
func (l *Lease) CompletedInTx() bool { return l.completedInTx.Load() }

// says is errors.Is(err, target) for a handler's error, whose Is or
// Unwrap method may panic (a typed nil pointer's, for one): such an
// error says nothing, and Classify, which recovers, makes the panic the
// attempt's failure, instead of this one taking the process and every
// lease it holds down with it.
func says(err, target error) (is bool) {
	defer func() {
		if recover() != nil {
			is = false
		}
	}()
	return errors.Is(err, target)
}
