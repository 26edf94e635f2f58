package leasehold

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leasehold/leasehold/internal/engine"
)

// resolutionCheckTimeout bounds the read that tells whether the
// transactions of a reconcile job's ResolveReconcileTx calls committed.
const resolutionCheckTimeout = 5 * time.Second

// resolvedEvent returns the EventFinished of resolution a of the job
// args name, moved to state, decided by reconciler; false for a
// resolution that is not reported (stuck: no outcome says it). A retry
// or snooze that cancelled the job (its cancel was requested) is
// reported as cancelled.
func resolvedEvent(reconciler *JobRow, args *ReconcileArgs, a ResolveAction, state JobState) (Event, bool) {
	var o Outcome
	switch {
	case state == StateCancelled:
		o = OutcomeCancelled
	case a == ResolveComplete:
		o = OutcomeCompleted
	case a == ResolveRetry:
		o = OutcomeRetried
	case a == ResolveSnooze:
		o = OutcomeSnoozed
	case a == ResolveFail:
		o = OutcomeFailed
	default:
		return Event{}, false
	}
	job := &JobRow{ID: args.JobID, Kind: args.JobKind, Queue: args.JobQueue, Attempt: args.Attempt, State: state}
	return Event{Kind: EventFinished, Job: job, Outcome: o, State: state, ResolvedBy: reconciler}, true
}

// txResolution is a resolution made in a caller's transaction, waiting
// for its reconcile job's handler to return.
type txResolution struct {
	ev Event
	// text is the resolution as the expired attempt's history row
	// records it once the transaction commits; cancelledText, when set,
	// as it records it when the job was cancelled instead (a driver
	// that ignores driver.ResolveParams.CancelledResolution records text).
	text, cancelledText string
}

// txResolutions holds the resolutions the running reconcile jobs made in
// callers' transactions (ResolveReconcileTx). Whether such a transaction
// commits is known only once the handler has returned, as for
// CompleteTx, so their events wait until then (reportTxResolutions).
type txResolutions struct {
	// held counts the leases with resolutions waiting, so that a handler
	// that made none (every one but a reconciler in a transaction) returns
	// without taking mu.
	held atomic.Int64
	mu   sync.Mutex
	m    map[*engine.Lease][]txResolution
}

// add records r, made under lease l.
func (rs *txResolutions) add(l *engine.Lease, r txResolution) {
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if rs.m == nil {
		rs.m = map[*engine.Lease][]txResolution{}
	}
	if _, ok := rs.m[l]; !ok {
		rs.held.Add(1)
	}
	rs.m[l] = append(rs.m[l], r)
}

// take removes and returns the resolutions made under lease l.
func (rs *txResolutions) take(l *engine.Lease) []txResolution {
	if rs.held.Load() == 0 {
		return nil
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	out, ok := rs.m[l]
	if ok {
		delete(rs.m, l)
		rs.held.Add(-1)
	}
	return out
}

// reportTxResolutions emits, once the handler that received ctx has
// returned, the events of the resolutions it made in transactions that
// committed: a resolution committed when the expired attempt's history
// row records it. One event at most per reconciled job; a check that
// fails is logged and its event not emitted.
func (c *Client) reportTxResolutions(ctx context.Context) {
	l := engine.FromContext(ctx)
	if l == nil {
		return
	}
	pending := c.resolutions.take(l)
	if len(pending) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), resolutionCheckTimeout)
	defer cancel()
	reported := map[int64]bool{}
	for _, r := range pending {
		if reported[r.ev.Job.ID] {
			continue
		}
		ok, err := c.resolutionCommitted(ctx, r)
		if err != nil {
			c.cfg.Logger.Warn("leasehold: cannot tell whether a resolution made in a transaction committed; not reporting it",
				"job", r.ev.Job.ID, "attempt", r.ev.Job.Attempt, "reconcile_job", r.ev.ResolvedBy.ID, "err", err)
			continue
		}
		if ok {
			reported[r.ev.Job.ID] = true
			c.events.emit(r.ev)
		}
	}
}

// resolutionCommitted reports whether r is recorded on its job's expired
// attempt.
func (c *Client) resolutionCommitted(ctx context.Context, r txResolution) (bool, error) {
	as, err := c.driver.ListAttempts(ctx, r.ev.Job.ID)
	if err != nil {
		return false, fmt.Errorf("leasehold: attempts of job %d: %w", r.ev.Job.ID, err)
	}
	for _, a := range as {
		if a.Attempt == r.ev.Job.Attempt {
			return a.Resolution == r.text || (r.cancelledText != "" && a.Resolution == r.cancelledText), nil
		}
	}
	return false, nil
}
