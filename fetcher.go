package leasehold

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/leasehold/leasehold/driver"
)

// claimTimeout bounds one claim statement. Claims run on a context that
// Stop does not cancel at once: a claim that committed must be seen, so
// that its leases are run or released rather than left to expire. Stop
// waits for a claim in flight until ShutdownTimeout, then abandons it (a
// database that does not answer must not hold Stop).
const claimTimeout = 30 * time.Second

// fetchCoalesce bounds how long a fetcher with jobs waiting lets freed
// slots gather before its next claim.
const fetchCoalesce = 2 * time.Millisecond

// fetcher claims jobs of one queue into free worker slots.
type fetcher struct {
	c     *Client
	queue string
	cfg   QueueConfig
	// inFlight counts this queue's claimed jobs not yet done; at most
	// cfg.MaxWorkers.
	inFlight atomic.Int64
	wakeC    chan struct{} // coalesced wake-up hints
	// more is set when the last claim filled every slot it asked for, so
	// freed slots should trigger another claim.
	more atomic.Bool
}

func newFetcher(c *Client, queue string, cfg QueueConfig) *fetcher {
	return &fetcher{
		c: c, queue: queue, cfg: cfg,
		wakeC: make(chan struct{}, 1),
	}
}

// poke asks the fetcher to look for jobs now. It never blocks.
func (f *fetcher) poke() {
	select {
	case f.wakeC <- struct{}{}:
	default:
	}
}

func (f *fetcher) loop(ctx context.Context) {
	poll := time.NewTicker(f.c.cfg.PollInterval)
	defer poll.Stop()
	for {
		f.fetchWhileFull(ctx)
		select {
		case <-ctx.Done():
			return
		case <-f.wakeC:
		case <-poll.C:
		}
	}
}

// fetchWhileFull claims into free slots until a claim comes back short or
// no slot is free.
func (f *fetcher) fetchWhileFull(ctx context.Context) {
	for ctx.Err() == nil {
		// more is set before free slots are counted: a job that finishes
		// after the count then sees it and wakes the loop (see done).
		f.more.Store(true)
		free := f.free()
		if free == 0 {
			return
		}
		n := min(free, DefaultFetchBatch)
		got := f.claim(ctx, n)
		if got < n {
			f.more.Store(false)
			return
		}
		f.coalesce(ctx)
	}
}

// coalesce runs after a claim that got every job it asked for, so more are
// likely waiting: it lets slots free up until half of them are free or
// fetchCoalesce has passed. The next claim is then one batch instead of a
// trickle of one-job statements, each a round trip and a commit; a slot
// waits at most fetchCoalesce.
func (f *fetcher) coalesce(ctx context.Context) {
	want := f.coalesceTarget()
	t := time.NewTimer(fetchCoalesce)
	defer t.Stop()
	for f.free() < want {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			return
		case <-f.wakeC:
		}
	}
}

// claim leases up to n jobs and starts them; it returns how many it got.
func (f *fetcher) claim(ctx context.Context, n int) int {
	c := f.c
	cctx, cancel := context.WithTimeout(c.claimCtx, claimTimeout)
	defer cancel()
	// The leases start no earlier than the claim is sent: their safe
	// window is measured from here, however late the reply comes back,
	// and checked again right before each handler starts (runClaimed).
	sent := c.mono()
	rows, err := c.driver.Claim(cctx, &driver.ClaimParams{
		Queue: f.queue, Kinds: c.kinds, Owner: c.owner,
		TTL: c.cfg.LeaseTTL, Limit: n, TakeOver: !f.cfg.FlagStuck,
	})
	if err != nil {
		c.cfg.Logger.Warn("leasehold: claim failed", "queue", f.queue, "err", err)
		return 0
	}
	c.stats.claimed.Add(int64(len(rows)))
	f.inFlight.Add(int64(len(rows)))
	for _, row := range rows {
		rj := c.register(f, row, sent)
		if ctx.Err() != nil {
			f.releaseNow(rj)
			continue
		}
		c.jobsWG.Add(1)
		c.pool.run(rj)
	}
	return len(rows)
}

// releaseNow gives back a lease claimed while the client was stopping.
func (f *fetcher) releaseNow(rj *runningJob) {
	f.c.stats.running.Add(-1)
	f.inFlight.Add(-1)
	if rj.finalized.CompareAndSwap(false, true) {
		rj.cancel(errShutdown)
		f.c.comp.submit(rj.finish(f.c.owner, OutcomeReleased))
	}
}

// free returns how many more jobs the queue may run now.
func (f *fetcher) free() int { return f.cfg.MaxWorkers - int(f.inFlight.Load()) }

// coalesceTarget is how many free slots end a coalesce early.
func (f *fetcher) coalesceTarget() int { return min(f.cfg.MaxWorkers, DefaultFetchBatch) }

// done frees the slot of a finished job and, if jobs are likely waiting,
// wakes the loop: when the first slot frees (the loop may be waiting on a
// full queue) and when enough are free to end a coalesce. Waking it for
// every job would cost a goroutine switch per job for nothing.
func (f *fetcher) done() {
	free := f.cfg.MaxWorkers - int(f.inFlight.Add(-1))
	f.c.jobsWG.Done()
	if f.more.Load() && (free == 1 || free == f.coalesceTarget()) {
		f.poke()
	}
}
