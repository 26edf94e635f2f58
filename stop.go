package leasehold

import (
	"context"
	"time"
)

// Stop shuts the client down gracefully: it stops claiming, lets running
// handlers finish for up to ShutdownTimeout (or until ctx is done), then
// cancels the rest (cause: shutdown) and releases their leases at once, so
// their jobs are pending again without waiting out a TTL. In a queue that
// flags or reconciles expired leases (QueueConfig.FlagStuck, Reconcile), a
// handler cut off this way may have been stopped mid-effect: its lease is
// not released but left to expire, and the watcher flags or reconciles the
// job as it would a crashed worker's.
//
// Stop returns within ShutdownTimeout plus the release budget plus a
// second and a quarter, even when the database does not answer: a claim still in
// flight when ShutdownTimeout passes is abandoned (leases it may have
// taken expire); releasing the leases of the handlers cut off and writing
// the last outcomes, releases and throughput counts share a release
// budget of up to 10 s of their own, even when ctx is already done, but
// no longer than the client's leases would live anyway (at least half a
// second; a quarter of a second more for the counts); and the background
// statements Stop cancelled get up to a second to return. An
// outcome still unwritten then is given up and counted in
// Stats().OutcomesDropped: its lease expires and the job comes back.
// Stop returns ctx's error, if any.
//
// Do not call Stop from a handler and wait for it there: Stop waits for
// every running handler, that one included, until ShutdownTimeout, then
// releases its lease too, so its job runs again. A handler that decides
// the process must stop starts Stop on a goroutine of its own and returns.
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

// shutdown stops a running client (see Stop): every service in the
// order of c.services, the first ones within ShutdownTimeout (claims in
// flight, then running handlers), the completer within its own release
// budget.
func (c *Client) shutdown(ctx context.Context) error {
	waitCtx, cancel := context.WithTimeout(ctx, c.cfg.ShutdownTimeout)
	defer cancel()
	for _, s := range c.services {
		_ = s.Stop(waitCtx) // a service that runs out of time has still stopped
	}
	c.settle(ctx)
	return ctx.Err()
}

// settleTimeout bounds how long Stop waits, once every service has
// stopped, for goroutines it cancelled without waiting for them.
const settleTimeout = time.Second

// settle waits up to settleTimeout, even when ctx is done, for the
// goroutines of every service to be gone. A service whose Stop ran out
// of time (ctx done, or ShutdownTimeout passed) has cancelled them
// without waiting: a statement of the watcher or the heartbeater may
// still be on its way back from the database. Stopped promises that they
// are gone, so that the caller may close the pool; a cancelled statement
// returns at once on both drivers, so this costs nothing in practice.
func (c *Client) settle(ctx context.Context) {
	settleCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), settleTimeout)
	defer cancel()
	for _, s := range c.services {
		_ = s.Stop(settleCtx) // a later Stop waits for the service's goroutines
	}
}
