package leasehold

import (
	"context"
	"sync"
	"time"
)

// Stop shuts the client down gracefully: it stops claiming, lets running
// handlers finish for up to ShutdownTimeout (or until ctx is done), then
// cancels the rest (cause: shutdown) and releases their leases at once, so
// their jobs are pending again without waiting out a TTL.
//
// Stop returns within ShutdownTimeout plus the release budget even when
// the database does not answer: a claim still in flight when
// ShutdownTimeout passes is abandoned (leases it may have taken expire),
// and writing the last outcomes and releases gets up to 10 s of its own,
// even when ctx is already done, but no longer than the client's leases
// would live anyway (at least half a second). An outcome still unwritten
// then is given up and counted in Stats().OutcomesDropped: its lease
// expires and the job comes back. Stop returns ctx's error, if any.
//
// It is safe to call before Start (a Start still reading the schema
// version then returns ErrClientStopped) and more than once: a later call
// waits until the first has finished, or until its own ctx is done.
// Afterwards Start returns ErrClientStopped, and Stopped is closed.
func (c *Client) Stop(ctx context.Context) error {
	c.mu.Lock()
	prev := c.state
	c.state = stateStopped
	if prev == stateStarting {
		c.cancelStart(ErrClientStopped)
	}
	c.mu.Unlock()
	switch prev {
	case stateStopped:
		select {
		case <-c.stopped:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	case stateRunning:
		defer close(c.stopped)
		return c.shutdown(ctx)
	default: // never started: nothing runs
		close(c.stopped)
		return nil
	}
}

// Stopped returns a channel that is closed once the client has fully
// stopped: Stop has returned from its work, so every fetcher, the
// listener, the watcher, the heartbeater and the completer are gone,
// every handler has returned or had its lease released, and every
// outcome has been written or given up (Stats().OutcomesDropped). Like
// http.Server's Shutdown, Stop does the stopping; Stopped lets any other
// goroutine wait for it, for example the one that owns the database pool
// and closes it only then. For a client that never started, the channel
// closes when Stop is called; until then it stays open.
func (c *Client) Stopped() <-chan struct{} { return c.stopped }

// shutdown stops a running client (see Stop).
func (c *Client) shutdown(ctx context.Context) error {
	c.cancel()
	waitCtx, cancelWait := context.WithTimeout(ctx, c.cfg.ShutdownTimeout)
	defer cancelWait()
	if !waitGroup(waitCtx, &c.bgWG) {
		c.abortClaims()
		c.cfg.Logger.Warn("leasehold: a claim still in flight at shutdown was abandoned; " +
			"leases it took, if any, expire and their jobs come back")
		c.bgWG.Wait()
	}
	if !waitGroup(waitCtx, &c.jobsWG) {
		c.releaseRunning()
	}
	c.pool.close()
	// Releasing is quick and spares the next worker a TTL: it gets a
	// short budget of its own even when ctx is already done.
	flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.releaseBudget())
	defer cancel()
	c.comp.close(flushCtx)
	c.abortClaims()
	c.hb.stop()
	return ctx.Err()
}

// releaseTimeout bounds the writing of outcomes and releases at Stop.
const releaseTimeout = 10 * time.Second

// minReleaseBudget is the least time Stop gives its last writes, so that
// a database that answers gets them even when the leases are about to
// expire.
const minReleaseBudget = 500 * time.Millisecond

// waitGroup waits for wg until ctx is done; it reports whether wg finished.
func waitGroup(ctx context.Context, wg *sync.WaitGroup) bool {
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	select {
	case <-done:
		return true
	case <-ctx.Done():
		return false
	}
}

// releaseBudget is how long Stop may spend writing the last outcomes:
// releaseTimeout, but no later than the newest of the client's leases
// would expire (by its last renewal, on the monotonic clock), since a
// release after that spares nobody a wait; at least minReleaseBudget.
func (c *Client) releaseBudget() time.Duration {
	running := c.snapshotRunning()
	if len(running) == 0 {
		return releaseTimeout
	}
	var newest int64
	for _, rj := range running {
		newest = max(newest, rj.renewedAt.Load())
	}
	left := time.Duration(newest-c.mono()) + c.cfg.LeaseTTL
	return min(max(left, minReleaseBudget), releaseTimeout)
}

// releaseRunning cancels the handlers still running and releases their
// leases. A handler that finishes later writes nothing: its lease is gone.
func (c *Client) releaseRunning() {
	for _, rj := range c.snapshotRunning() {
		if !rj.finalized.CompareAndSwap(false, true) {
			continue
		}
		rj.cancel(errShutdown)
		c.comp.submit(rj.finish(c.owner, OutcomeReleased))
	}
}
