package engine

import (
	"context"
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
	k.write(batch, params, 0)
}

// write writes items, retrying with backoff while the database fails.
// since is when (Clock) the batch they come from first failed; 0
// for a batch not yet tried.
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
func (k *Completer) write(items []*finishItem, params []*driver.FinishParams, since int64) {
	backoff := 10 * time.Millisecond
	for failures := 1; ; failures++ {
		err := k.try(items, params, since != 0)
		if err == nil {
			return
		}
		if since == 0 {
			since = k.cfg.Window.Clock.Now()
		}
		if failures >= splitAfter && len(items) > 1 {
			k.writeHalves(items, params, since)
			return
		}
		if failures >= splitAfter && len(items) == 1 && k.lastOK.Load() <= since {
			// Alone, this outcome cannot tell a database that refuses it
			// from one that is down: the outcomes queued behind it get
			// their turn, and show which it is.
			k.flushWaiting()
		}
		if failures >= splitAfter && k.refused(err) && k.acceptedSince(items, since) {
			k.drop(items[0])
			k.cfg.Logger.Error("leasehold: the database refuses this outcome; given up, the lease will expire",
				"job", params[0].ID, "attempt", params[0].Attempt, "outcome", params[0].Outcome, "err", err)
			return
		}
		select {
		case <-k.abandon:
			for _, it := range items {
				k.drop(it)
			}
			return
		case <-time.After(backoff):
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

// writeHalves tries each half of a failing batch once, then writes (see
// write) the halves that failed. A half written at once shows that the
// database is up, which lets write give up an outcome that fails alone.
func (k *Completer) writeHalves(items []*finishItem, params []*driver.FinishParams, since int64) {
	mid := len(items) / 2
	var failed [][2]int
	for _, h := range [][2]int{{0, mid}, {mid, len(items)}} {
		if k.try(items[h[0]:h[1]], params[h[0]:h[1]], true) != nil {
			failed = append(failed, h)
		}
	}
	for _, h := range failed {
		k.write(items[h[0]:h[1]], params[h[0]:h[1]], since)
	}
}

// try makes one finish statement for items and counts its outcomes;
// retried says an earlier statement for them failed (see account).
func (k *Completer) try(items []*finishItem, params []*driver.FinishParams, retried bool) error {
	ctx, cancel := context.WithTimeout(k.tryCtx, ClaimTimeout)
	ids, err := k.cfg.Finisher.Finish(ctx, nil, params)
	cancel()
	if err != nil {
		k.cfg.Emit(leasetype.Event{Kind: leasetype.EventFinishFailed, Leases: len(params), Err: err})
		k.cfg.Logger.Warn("leasehold: finish failed; retrying", "jobs", len(params), "err", err)
		return err
	}
	k.lastOK.Store(k.cfg.Window.Clock.Now())
	k.account(items, ids, retried)
	return nil
}

// flushWaiting writes the outcomes waiting in the queue, up to one batch,
// while the flusher is held by an outcome that keeps failing alone.
func (k *Completer) flushWaiting() {
	var batch []*finishItem
gather:
	for len(batch) < k.cfg.Batch {
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
		return
	}
	params := make([]*driver.FinishParams, len(batch))
	for i, it := range batch {
		params[i] = &it.p
	}
	k.flush(batch, params)
}
