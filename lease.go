package leasehold

import (
	"context"
	"errors"
	"fmt"
	"time"
)

type leaseKey struct{}

// CheckLease reports whether the lease of the job whose handler received
// ctx may still be relied on, measured on the client's own monotonic clock
// from when the last successful claim or renewal of that lease was sent.
// A handler calls it right before an outside-facing step that no fence can
// undo, such as a call to a payment provider: once LeaseTTL -
// LeaseSafetyMargin has passed since that send, another worker may own the
// job before the step is over, so the step must not start.
//
// It returns nil while the lease is inside that safe window: nobody else
// can then take the job over for at least LeaseSafetyMargin, even if no
// renewal succeeds meanwhile, which bounds how long the guarded step may
// take. It returns an error wrapping ErrLeaseLost once the window has
// passed or the lease was found lost, given up or released; ctx's cause
// when ctx is otherwise done (operator cancel, shutdown, a deadline of the
// handler's own); and ErrNotInHandler when ctx does not come from a
// running handler.
func CheckLease(ctx context.Context) error {
	rj, _ := ctx.Value(leaseKey{}).(*runningJob)
	if rj == nil {
		return fmt.Errorf("%w: CheckLease needs the context of a running handler", ErrNotInHandler)
	}
	if err := rj.fetcher.c.leaseUsable(rj); err != nil {
		return err
	}
	if err := context.Cause(ctx); err != nil {
		return fmt.Errorf("leasehold: job %d attempt %d: %w", rj.row.ID, rj.row.Attempt, err)
	}
	return nil
}

// leaseUsable returns nil while this client may still act on rj's lease,
// and an error wrapping ErrLeaseLost otherwise.
func (c *Client) leaseUsable(rj *runningJob) error {
	lost := func(why string, args ...any) error {
		return fmt.Errorf("%w: job %d attempt %d: %s", ErrLeaseLost, rj.row.ID, rj.row.Attempt, fmt.Sprintf(why, args...))
	}
	switch {
	case rj.finalized.Load():
		return lost("lease given up (handler returned or client stopping)")
	case rj.lostInDB.Load():
		return lost("lease taken over")
	case errors.Is(context.Cause(rj.ctx), ErrLeaseLost):
		return lost("lease not renewed in time")
	}
	if late := c.overdue(rj, c.mono()); late >= 0 {
		return lost("safe window passed %v ago", late)
	}
	return nil
}

// safeWindow is how long after sending a claim or renewal this client
// relies on the lease it set: LeaseTTL - LeaseSafetyMargin. The database
// starts the lease no earlier than the send, so within the window nobody
// else can hold the job, whatever the clocks of the two machines say.
func (c *Client) safeWindow() time.Duration { return c.cfg.LeaseTTL - c.cfg.LeaseSafetyMargin }

// overdue returns how far past its safe window rj's lease is at now (see
// Client.mono): negative while the lease is inside it.
func (c *Client) overdue(rj *runningJob, now int64) time.Duration {
	return time.Duration(now-rj.renewedAt.Load()) - c.safeWindow()
}

// errNotStarted is the cause set on the context of a job whose handler
// was not started because its lease could no longer be relied on.
var errNotStarted = errors.New("leasehold: lease past its safe window; handler not started")

// skipUnsafeStart reports whether rj's handler must not start because
// leaseUsable refuses its lease (a claim reply that arrived late, a wait
// for a worker, a lease already found lost), and if so ends the lease.
//
// The lease is released rather than left to expire. The release is a
// fenced write: if another worker has taken the job over, the database
// refuses it and changes nothing; if not, the job is pending again at
// once, keeps its place in line and is not charged to its retry budget
// (no handler ran, so nothing outside can have happened), instead of
// waiting out the TTL and the watcher, which could also flag a job that
// never ran as stuck.
func (c *Client) skipUnsafeStart(rj *runningJob) bool {
	err := c.leaseUsable(rj)
	if err == nil {
		return false
	}
	c.stats.running.Add(-1)
	if !rj.finalized.CompareAndSwap(false, true) {
		return true // Stop has released the lease already
	}
	c.stats.skippedLate.Add(1)
	c.cfg.Logger.Warn("leasehold: lease past its safe window before the handler started; not running it",
		"job", rj.row.ID, "attempt", rj.row.Attempt, "late", c.overdue(rj, c.mono()), "err", err)
	rj.cancel(errNotStarted) // the watchdog and lost-lease checks skip it now
	if rj.lostInDB.Load() {
		c.forget(rj) // a heartbeat found it taken over: nothing to write
		return true
	}
	c.comp.submit(rj.finish(c.owner, OutcomeReleased))
	return true
}
