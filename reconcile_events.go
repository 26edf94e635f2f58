package leasehold

import (
	"context"
	"fmt"
	"slices"
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

// txResolution is a resolution that a reconcile job wrote, and, when it
// was made in a caller's transaction, that waits for the job's handler
// to return.
type txResolution struct {
	// jobID is the reconciled job's id.
	jobID int64
	// ev is the resolution's event, when reported (see resolvedEvent).
	ev       Event
	reported bool
	// text is the resolution as the expired attempt's history row
	// records it once the transaction commits; cancelledText, when set,
	// as it records it when the job was cancelled instead (a driver
	// that ignores driver.ResolveParams.CancelledResolution records text).
	text, cancelledText string
}

// reportResolution reports r, a resolution the driver wrote under lease
// l. One that committed on its own (tx nil) is reported at once, and the
// resolutions of the same job that l made in transactions are dropped:
// the fences let one resolution of a job's attempt in, so none of theirs
// committed (a rolled-back one whose text is the same must not report
// this one a second time). One made in tx waits for l's handler to
// return (reportTxResolutions); if the handler has returned already,
// nothing would ever report it, and it returns an error wrapping
// ErrLeaseLost: tx must roll back.
func (c *Client) reportResolution(l *engine.Lease, tx any, r txResolution) error {
	if tx == nil {
		c.resolutions.drop(l, r.jobID)
		if r.reported {
			c.events.emit(r.ev)
		}
		return nil
	}
	waiting := !l.Returned()
	if r.reported {
		waiting = c.resolutions.add(l, r)
	}
	if waiting {
		return nil
	}
	return fmt.Errorf("%w: job %d attempt %d: its handler returned while it resolved job %d in a transaction; roll the transaction back",
		ErrLeaseLost, l.Row.ID, l.Row.Attempt, r.jobID)
}

// txResolutions holds the resolutions the running reconcile jobs made in
// callers' transactions (ResolveReconcileTx). Whether such a transaction
// commits is known only once the handler has returned, as for
// CompleteTx, so their events wait until then (reportTxResolutions).
//
// The handler's return is marked on its lease (engine.Lease.MarkReturned)
// before take, and add refuses, under mu, a resolution of a lease whose
// handler has returned: a resolution that arrives once take has run (from
// a goroutine the handler left behind) is never held, so the map keeps
// no lease after its handler's return.
type txResolutions struct {
	// held counts the leases with resolutions waiting, plus the adds
	// under way, so that a handler that made none (every one but a
	// reconciler in a transaction) returns without taking mu. add counts
	// itself before it reads whether the handler returned, and take reads
	// held after the return was marked: a take that finds held 0 cannot
	// miss an add that then reads the handler as still running.
	held atomic.Int64
	mu   sync.Mutex
	m    map[*engine.Lease][]txResolution
}

// add records r, made under lease l, and returns true; it returns false,
// recording nothing, when l's handler has returned.
func (rs *txResolutions) add(l *engine.Lease, r txResolution) bool {
	rs.held.Add(1) // before reading l.Returned: see held
	rs.mu.Lock()
	defer rs.mu.Unlock()
	if l.Returned() {
		rs.held.Add(-1)
		return false
	}
	if _, ok := rs.m[l]; ok {
		rs.held.Add(-1) // l is counted already
	}
	if rs.m == nil {
		rs.m = map[*engine.Lease][]txResolution{}
	}
	rs.m[l] = append(rs.m[l], r)
	return true
}

// take removes and returns the resolutions made under lease l, whose
// handler's return the caller has marked (engine.Lease.MarkReturned).
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

// drop removes the resolutions of job jobID made under lease l.
func (rs *txResolutions) drop(l *engine.Lease, jobID int64) {
	if rs.held.Load() == 0 {
		return
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rest, ok := rs.m[l]
	if !ok {
		return
	}
	rest = slices.DeleteFunc(rest, func(r txResolution) bool { return r.jobID == jobID })
	if len(rest) > 0 {
		rs.m[l] = rest
		return
	}
	delete(rs.m, l)
	rs.held.Add(-1)
}

// reportTxResolutions marks the lease of the handler that received ctx
// as returned, the handler having returned, so that a resolution made
// under it from then on is refused (see txResolutions), then emits the
// events of the resolutions the handler made in transactions that
// committed: a resolution committed when the expired attempt's history
// row records it. One event at most per reconciled job; a check that
// fails is logged and its event not emitted.
func (c *Client) reportTxResolutions(ctx context.Context) {
	l := engine.FromContext(ctx)
	if l == nil {
		return
	}
	l.MarkReturned() // before take: see txResolutions
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
