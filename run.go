package leasehold

import (
	"context"
	"errors"
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/leasehold/leasehold/driver"
)

type clientKey struct{}

// ClientFromContext returns the client running the job whose handler
// received ctx, for calls such as CompleteTx; nil outside a handler. The
// drivers' typed completion functions (pgdriver.CompleteTx,
// sqlitedriver.CompleteTx) find the client this way.
func ClientFromContext(ctx context.Context) *Client {
	c, _ := ctx.Value(clientKey{}).(*Client)
	return c
}

// errShutdown is the cause of handler contexts cancelled by Stop.
var errShutdown = errors.New("leasehold: client shutting down")

// errHandlerDone is the cause set on a job's context once its handler has
// returned.
var errHandlerDone = errors.New("leasehold: handler returned")

// runningJob is one lease held by this client while its handler runs.
type runningJob struct {
	row    *JobRow
	ctx    context.Context
	cancel context.CancelCauseFunc
	// renewedAt is the monotonic time (see Client.mono) at which the last
	// successful claim or renewal of this lease was sent.
	renewedAt atomic.Int64
	// finalized is set by whoever submits the lease's outcome: the runner
	// or Stop. Only one of them does.
	finalized atomic.Bool
	// lostInDB: a heartbeat found the lease gone from the database.
	lostInDB atomic.Bool
	// expiredLocally: the lease was not renewed in time and the worker gave
	// it up on its own clock.
	expiredLocally atomic.Bool
	// completedInTx: the handler completed the job with CompleteTx.
	completedInTx atomic.Bool
	// completedTx is the transaction of the latest successful CompleteTx.
	completedTx atomic.Pointer[callerTx]
	// fin is the lease's outcome once submitted (see finish).
	fin finishItem
	// fetcher claimed the lease; its slot is freed when the handler
	// returns.
	fetcher *fetcher
}

// finish returns the lease's outcome item, set to outcome o. Only the
// caller that set finalized may call it.
func (rj *runningJob) finish(owner string, o Outcome) *finishItem {
	rj.fin = finishItem{rj: rj, p: driver.FinishParams{ID: rj.row.ID, Owner: owner, Attempt: rj.row.Attempt, Outcome: o}}
	return &rj.fin
}

// ref is the lease's fencing token. The running set is keyed by it, not
// by job id: after losing a lease, the same client may claim the job again
// while the old handler is still winding down.
func (rj *runningJob) ref() driver.LeaseRef {
	return driver.LeaseRef{ID: rj.row.ID, Attempt: rj.row.Attempt}
}

// mono returns the client's monotonic clock. It is only ever compared with
// itself, never with database times.
func (c *Client) mono() int64 { return int64(time.Since(c.epoch)) }

// register adds a lease f claimed, sent at claimSent, to the running set.
func (c *Client) register(f *fetcher, row *JobRow, claimSent int64) *runningJob {
	rj := &runningJob{row: row, fetcher: f}
	// The context carries the lease for CheckLease.
	rj.ctx, rj.cancel = context.WithCancelCause(context.WithValue(c.jobBase, leaseKey{}, rj))
	rj.renewedAt.Store(claimSent)
	c.mu.Lock()
	c.running[rj.ref()] = rj
	c.mu.Unlock()
	c.stats.running.Add(1)
	return rj
}

// forget drops a lease from the running set once nothing more will be
// written for it: it is no longer heartbeated.
func (c *Client) forget(rj *runningJob) {
	c.mu.Lock()
	delete(c.running, rj.ref())
	c.mu.Unlock()
}

// snapshotRunning returns the leases currently held.
func (c *Client) snapshotRunning() []*runningJob {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]*runningJob, 0, len(c.running))
	for _, rj := range c.running {
		out = append(out, rj)
	}
	return out
}

func (c *Client) lookupRunning(id int64, attempt int) *runningJob {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.running[driver.LeaseRef{ID: id, Attempt: attempt}]
}

// runClaimed runs a job its fetcher claimed, then frees its slot. The
// lease is checked here, on the worker goroutine right before the handler
// would start, so that a late claim reply and time spent waiting for a
// worker both count.
func (c *Client) runClaimed(rj *runningJob) {
	defer rj.fetcher.done()
	if c.skipUnsafeStart(rj) {
		return
	}
	c.runJob(rj, c.cfg.Workers.lookup(rj.row.Kind))
}

// runJob runs one claimed job's handler and submits its fenced outcome.
// The lease stays in the running set, and so keeps being renewed, until
// the completer has written that outcome: a queue of outcomes waiting for
// a busy database must not let the leases behind them expire.
func (c *Client) runJob(rj *runningJob, h *handler) {
	err := c.callHandler(rj, h)
	c.stats.running.Add(-1)
	if !rj.finalized.CompareAndSwap(false, true) {
		rj.cancel(context.Canceled)
		return // Stop already released this lease
	}
	item := c.decide(rj, err)
	rj.cancel(errHandlerDone) // the watchdog and lost-lease checks skip it now
	if item == nil {
		c.forget(rj)
		return
	}
	c.comp.submit(item)
}

func (c *Client) callHandler(rj *runningJob, h *handler) (err error) {
	if h == nil {
		return fmt.Errorf("%w: %s", ErrUnknownKind, rj.row.Kind)
	}
	defer func() {
		if v := recover(); v != nil {
			c.stats.panics.Add(1)
			err = &PanicError{Value: v, Stack: debug.Stack()}
		}
	}()
	return h.run(rj.ctx, rj.row)
}

// finishItem is an outcome waiting for the completer.
type finishItem struct {
	p driver.FinishParams
	// rj is the lease the outcome belongs to, dropped from the running
	// set once the outcome is written (or given up).
	rj *runningJob
	// afterTx: the handler already completed the job with CompleteTx; this
	// write only reschedules it if that transaction rolled back, so its
	// refusal is expected and means the completion committed.
	afterTx bool
}

// errCompleteTxRolledBack is the attempt's error when its handler returned
// nil after a CompleteTx whose transaction did not commit: the job is not
// done, and the attempt is charged like any failure.
var errCompleteTxRolledBack = errors.New("handler returned nil but its CompleteTx transaction did not commit")

// decide turns a handler's result into the fenced write to make, or nil
// when there is nothing this client may write.
func (c *Client) decide(rj *runningJob, err error) *finishItem {
	row := rj.row
	item := rj.finish(c.owner, "")
	p := &item.p
	cause := context.Cause(rj.ctx)
	// After a CompleteTx, whatever the handler returned, a refusal of this
	// write means that transaction committed: the job is completed.
	item.afterTx = rj.completedInTx.Load()
	switch {
	case err == nil && item.afterTx:
		c.decideError(row, p, errCompleteTxRolledBack)
	case err == nil:
		p.Outcome = OutcomeCompleted
	case rj.lostInDB.Load(), errors.Is(err, ErrLeaseLost):
		return nil // the lease is someone else's now: nothing to write
	case errors.Is(cause, ErrJobCancelled):
		p.Outcome, p.Error = OutcomeCancelled, "cancelled by operator"
	case rj.expiredLocally.Load():
		p.Outcome, p.Error = OutcomeLeaseLost, "lease not renewed in time; worker gave it up"
	case errors.Is(cause, errShutdown):
		p.Outcome = OutcomeReleased
	default:
		c.decideError(row, p, err)
	}
	return item
}

func (c *Client) decideError(row *JobRow, p *driver.FinishParams, err error) {
	var (
		perm   *PermanentError
		snooze *SnoozeError
		cancel *CancelError
	)
	p.Error = errorText(err)
	switch {
	case errors.As(err, &snooze):
		p.Outcome, p.Delay, p.Error = OutcomeSnoozed, snooze.Delay, ""
	case errors.As(err, &cancel):
		p.Outcome = OutcomeCancelled
	case errors.As(err, &perm):
		p.Outcome = OutcomeFailed
	case row.ChargedAttempts() >= row.MaxAttempts:
		p.Outcome = OutcomeFailed
	default:
		p.Outcome, p.Delay = OutcomeRetried, c.cfg.RetryPolicy.NextRetry(row, err)
	}
}
