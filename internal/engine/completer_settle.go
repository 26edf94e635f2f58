package engine

import (
	"context"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/leasetype"
)

// EndedReader is the part of the driver that reads the history rows of
// ended attempts (driver.EndedReader).
type EndedReader interface {
	EndedAttempts(ctx context.Context, leases []driver.LeaseRef) ([]driver.EndedAttempt, error)
}

// attemptKey is a lease's fencing token without its owner.
type attemptKey struct {
	id      int64
	attempt int
}

// settle reports the unapplied items of a written batch that say nothing
// by themselves (see account), by the history rows of their attempts,
// read in one statement: the finish writes an attempt's row with the job
// update, naming the owner and the outcome. An item is finished when its
// attempt was ended by its owner with its own outcome (an earlier try of
// this write committed; retried only), or with the outcome it records
// when a cancel request cancelled the job (cancelled, then: see
// cancelledEvent), or, written after CompleteTx, with
// completed (the handler's transaction committed); any other item is
// refused: its lease was taken over or rescued, its job finished by
// nobody of this attempt. When the driver cannot read the rows, or the
// read fails, the items are reported as before the read existed
// (unsettled).
func (k *Completer) settle(items []*finishItem, retried bool) {
	ended, ok := k.readEnded(items)
	for _, it := range items {
		if !ok {
			k.unsettled(it, retried)
			continue
		}
		e, found := ended[attemptKey{it.p.ID, it.p.Attempt}]
		mine := found && e.Owner == it.p.Owner
		switch {
		case mine && retried && e.Outcome == it.p.Outcome:
			k.cfg.Emit(it.event(leasetype.EventFinished))
		case mine && retried && it.p.Cancellable() && e.Outcome == it.p.OutcomeWhenCancelled():
			k.cfg.Emit(it.cancelledEvent())
		case mine && it.afterTx && e.Outcome == leasetype.OutcomeCompleted:
			k.cfg.Emit(completedInTx(it))
		default:
			k.cfg.Emit(it.event(leasetype.EventFenceRefused))
		}
	}
}

// readEnded reads the history rows of the items' attempts, keyed by
// lease; false when there is no reader or the read failed (logged).
func (k *Completer) readEnded(items []*finishItem) (map[attemptKey]driver.EndedAttempt, bool) {
	if k.cfg.Ended == nil {
		return nil, false
	}
	refs := make([]driver.LeaseRef, len(items))
	for i, it := range items {
		refs[i] = driver.LeaseRef{ID: it.p.ID, Attempt: it.p.Attempt}
	}
	ctx, cancel := context.WithTimeout(k.tryCtx, ClaimTimeout)
	rows, err := k.cfg.Ended.EndedAttempts(ctx, refs)
	cancel()
	if err != nil {
		k.cfg.Logger.Warn("leasehold: could not read the history of outcomes whose lease was gone at their write; "+
			"they are reported without it", "jobs", len(items), "err", err)
		return nil, false
	}
	ended := make(map[attemptKey]driver.EndedAttempt, len(rows))
	for _, r := range rows {
		ended[attemptKey{r.ID, r.Attempt}] = r
	}
	return ended, true
}

// unsettled reports an item settle could not read the history of: written
// after CompleteTx, as completed (the safety write's refusal most often
// means that transaction committed); after a failed try, not at all (it
// may have applied, or been refused); otherwise refused.
func (k *Completer) unsettled(it *finishItem, retried bool) {
	switch {
	case it.afterTx:
		k.cfg.Emit(completedInTx(it))
	case !retried:
		k.cfg.Emit(it.event(leasetype.EventFenceRefused))
	}
}

// completedInTx is the EventFinished of an item written after a CompleteTx
// that committed: the job is completed, whatever the item would have
// written.
func completedInTx(it *finishItem) leasetype.Event {
	ev := it.event(leasetype.EventFinished)
	ev.Outcome, ev.State = leasetype.OutcomeCompleted, leasetype.StateCompleted
	return ev
}
