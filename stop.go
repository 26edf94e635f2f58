package leasehold

import (
	"context"
	"time"
)

// Stop shuts the client down gracefully: it stops claiming, lets running
// handlers finish for up to ShutdownTimeout (or until ctx is done), then
// cancels the rest (cause: shutdown) and releases their leases at once, so
// their jobs are pending again without waiting out a TTL. Writing the
// outcomes and releases gets up to 10 s of its own, even when ctx is
// already done (an outcome still unwritten then is given up: its lease
// expires and the watcher returns the job). Stop returns ctx's error, if
// any. It is safe to call twice and before Start; afterwards Start returns
// ErrClientStopped.
func (c *Client) Stop(ctx context.Context) error {
	c.mu.Lock()
	prev := c.state
	c.state = stateStopped
	c.mu.Unlock()
	if prev != stateRunning {
		return nil
	}
	c.cancel()
	c.bgWG.Wait()
	if !c.waitJobs(ctx) {
		c.releaseRunning()
	}
	c.pool.close()
	// Releasing is quick and spares the next worker a TTL: it gets a
	// short budget of its own even when ctx is already done.
	flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	c.comp.close(flushCtx)
	c.hb.stop()
	return ctx.Err()
}

// releaseTimeout bounds the writing of outcomes and releases at Stop.
const releaseTimeout = 10 * time.Second

// waitJobs waits for running handlers until ShutdownTimeout or ctx; it
// reports whether all finished.
func (c *Client) waitJobs(ctx context.Context) bool {
	done := make(chan struct{})
	go func() { c.jobsWG.Wait(); close(done) }()
	t := time.NewTimer(c.cfg.ShutdownTimeout)
	defer t.Stop()
	select {
	case <-done:
		return true
	case <-t.C:
	case <-ctx.Done():
	}
	return false
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
