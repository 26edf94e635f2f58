package engine

import (
	"context"
	"slices"
	"time"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/leasetype"
)

// splitAfter is how many times in a row a batch of several outcomes may
// fail before it is written in halves.
const splitAfter = 3

// flush writes one batch (params are its items' parameters) and then
// drops its leases from the lease set.
func (k *Completer) flush(batch []*finishItem, params []*driver.FinishParams) {
	defer func() {
		for _, it := range batch {
			k.forget(it)
		}
	}()
	k.write(batch, params)
}

// part is a run of outcomes written by one statement: since is when
// (Clock) the batch it comes from first failed; 0 for one not yet tried.
type part struct {
	items  []*finishItem
	params []*driver.FinishParams
	since  int64
}

// writing is the state of one write: the parts still to write after the
// current one, in order, and the outcomes taken from the queue meanwhile
// (see tryWaiting), whose leases the write forgets at its end.
type writing struct {
	parts  []part
	pulled []*finishItem
}

// write writes items, retrying with backoff while the database fails.
//
// A batch that keeps failing may hold one outcome the database refuses
// every time, which must not hold back the others: after splitAfter
// failures in a row the batch is written in halves. An outcome that still
// fails alone, with an error the database returned for the statement
// (see refused), when the database has accepted another write since its
// batch first failed (see acceptedSince), is given up: its lease expires
// and the watcher returns the job. While every write fails (the database
// is down), or while its own fail on the way to the database (a dead
// pooled connection after a restart, a timeout), nothing is given up: an
// outcome is dropped only when Stop gives up on it.
//
// The parts a batch is split into, and the outcomes taken from the queue
// while one fails alone, are written one after the other by this one
// loop, oldest first, each without waiting once the one before is
// written: nothing nests, so after an outage every outcome held is
// written as soon as the database is back, in the order it came.
func (k *Completer) write(items []*finishItem, params []*driver.FinishParams) {
	w := &writing{parts: []part{{items: items, params: params}}}
	defer func() {
		for _, it := range w.pulled {
			k.forget(it)
		}
	}()
	for len(w.parts) > 0 {
		p := w.parts[0]
		w.parts = w.parts[1:]
		if !k.writePart(w, p) {
			for _, rest := range w.parts {
				for _, it := range rest.items {
					k.drop(it)
				}
			}
			return
		}
	}
}

// writePart writes p, retrying with backoff, until it is written, split
// (its failing halves added to w) or given up. It returns false when Stop
// gave up on it, its items reported dropped.
func (k *Completer) writePart(w *writing, p part) bool {
	backoff := 10 * time.Millisecond
	for failures := 1; ; failures++ {
		before := k.lastOK.Load()
		err := k.try(p.items, p.params, p.since != 0)
		if err == nil {
			return true
		}
		if p.since == 0 {
			p.since = k.cfg.Window.Clock.Now()
		}
		if failures >= splitAfter && len(p.items) > 1 {
			k.writeHalves(w, p)
			return true
		}
		if failures >= splitAfter && len(p.items) == 1 && k.lastOK.Load() <= p.since {
			// Alone, this outcome cannot tell a database that refuses it
			// from one that is down: the outcomes queued behind it get
			// their turn, and show which it is.
			p = k.tryWaiting(w, p)
		}
		if failures >= splitAfter && len(p.items) == 1 && k.refused(err) && k.acceptedSince(p.items, p.since) {
			k.drop(p.items[0])
			k.cfg.Logger.Error("leasehold: the database refuses this outcome; given up, the lease will expire",
				"job", p.params[0].ID, "attempt", p.params[0].Attempt, "outcome", p.params[0].Outcome, "err", err)
			return true
		}
		// A statement accepted since this one failed (the outcomes queued
		// behind it) shows the database answering: retry at once rather
		// than wait out a backoff grown during an outage.
		wait := backoff
		if k.lastOK.Load() != before {
			wait = 0
		}
		select {
		case <-k.abandon:
			for _, it := range p.items {
				k.drop(it)
			}
			return false
		case <-time.After(wait):
		}
		backoff = min(2*backoff, time.Second)
	}
}

// refused reports whether err, from a failed finish statement, is the
// database refusing it (CompleterConfig.Refused; every error without one).
func (k *Completer) refused(err error) bool {
	return k.cfg.Refused == nil || k.cfg.Refused(err)
}

// acceptedSince reports whether the database accepted a write of this
// client after since (Clock): a finish statement, or, for the one outcome
// left, a heartbeat that renewed its lease. The heartbeat matters when no
// other outcome comes (the last job of a quiet queue): without it, an
// outcome the database refuses every time was retried forever while its
// lease was renewed, and the job sat in processing, out of the watcher's
// reach, until Stop.
func (k *Completer) acceptedSince(items []*finishItem, since int64) bool {
	if k.lastOK.Load() > since {
		return true
	}
	return len(items) == 1 && items[0].lease != nil && items[0].lease.renewedAt.Load() > since
}

// writeHalves tries each half of a failing part once, and adds the
// halves that failed to w: the first to be written next, the second after
// the parts already waiting (the outcomes of a part are written in one
// statement, so their order among themselves does not matter, while the
// parts waiting hold outcomes that came before the ones this part took
// from the queue). A half written at once shows that the database is up,
// which lets write give up an outcome that fails alone.
func (k *Completer) writeHalves(w *writing, p part) {
	mid := len(p.items) / 2
	var failed []part
	for _, h := range [][2]int{{0, mid}, {mid, len(p.items)}} {
		half := part{items: p.items[h[0]:h[1]], params: p.params[h[0]:h[1]], since: p.since}
		if k.try(half.items, half.params, true) != nil {
			failed = append(failed, half)
		}
	}
	switch len(failed) {
	case 1:
		w.parts = append([]part{failed[0]}, w.parts...)
	case 2:
		w.parts = append(append([]part{failed[0]}, w.parts...), failed[1])
	}
}

// try makes one finish statement for items and counts its outcomes;
// retried says an earlier statement for them failed (see account).
func (k *Completer) try(items []*finishItem, params []*driver.FinishParams, retried bool) error {
	ctx, cancel := context.WithTimeout(k.tryCtx, ClaimTimeout)
	applied, err := k.cfg.Finisher.Finish(ctx, nil, params)
	cancel()
	if err != nil {
		k.cfg.Emit(leasetype.Event{Kind: leasetype.EventFinishFailed, Leases: len(params), Err: err})
		k.cfg.Logger.Warn("leasehold: finish failed; retrying", "jobs", len(params), "err", err)
		return err
	}
	k.lastOK.Store(k.cfg.Window.Clock.Now())
	k.account(items, applied, retried)
	return nil
}

// tryWaiting tries once, in one statement, the outcomes waiting in the
// queue (with p, up to one batch), while the flusher is held by p, an
// outcome that keeps failing alone. Those that fail are added to p, which
// it returns: they failed as p does, so p's write retries them with it
// (and splits them from it if one is refused), rather than a write of
// their own nested in p's, which waited out a backoff of its own after
// each level below it was written. When parts of p's batch wait to be
// written after p, they go to the last of them instead.
func (k *Completer) tryWaiting(w *writing, p part) part {
	var batch []*finishItem
gather:
	for len(batch) < max(k.cfg.Batch-len(p.items), 1) {
		select {
		case it, ok := <-k.in:
			if !ok {
				break gather
			}
			batch = append(batch, it)
		default:
			break gather
		}
	}
	if len(batch) == 0 {
		return p
	}
	params := make([]*driver.FinishParams, len(batch))
	for i, it := range batch {
		params[i] = &it.p
	}
	if k.try(batch, params, false) == nil {
		for _, it := range batch {
			k.forget(it)
		}
		return p
	}
	w.pulled = append(w.pulled, batch...)
	if n := len(w.parts); n > 0 && len(w.parts[n-1].items)+len(batch) <= k.cfg.Batch {
		// Parts of p's batch wait already, with outcomes older than
		// these: the last one takes them, so that they are written in
		// the order they came (one statement when the database is back).
		w.parts[n-1] = w.parts[n-1].with(batch, params)
		return p
	}
	if len(w.parts) > 0 {
		w.parts = append(w.parts, part{items: batch, params: params, since: p.since})
		return p
	}
	return p.with(batch, params)
}

// with returns p with items added (params their parameters). It copies:
// p's slices may share an array with another part.
func (p part) with(items []*finishItem, params []*driver.FinishParams) part {
	return part{items: slices.Concat(p.items, items), params: slices.Concat(p.params, params), since: p.since}
}
