package leasehold

import (
	"context"
	"sync"
	"time"

	"github.com/leasehold/leasehold/driver"
)

// heartbeatChunk caps the leases renewed by one statement (one
// transaction), which bounds how long it holds their row locks (about
// 12 µs a lease on PostgreSQL: a quarter of a second for a full chunk).
// Below it, a client renews all its leases with one statement per
// interval, however many it holds.
const heartbeatChunk = 20_000

// heartbeater renews every lease of the client in one statement per
// interval, and runs the watchdog that gives up leases it could not renew
// in time (DESIGN invariant 9).
type heartbeater struct {
	c      *Client
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

func newHeartbeater(c *Client) *heartbeater { return &heartbeater{c: c} }

func (h *heartbeater) start() {
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	h.wg.Add(2)
	go func() { defer h.wg.Done(); h.renewLoop(ctx) }()
	go func() { defer h.wg.Done(); h.watchdogLoop(ctx) }()
}

func (h *heartbeater) stop() {
	h.cancel()
	h.wg.Wait()
}

func (h *heartbeater) renewLoop(ctx context.Context) {
	t := time.NewTicker(h.c.cfg.HeartbeatInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			h.beat(ctx)
		}
	}
}

// beat renews all running leases and cancels the handlers of lost ones.
func (h *heartbeater) beat(ctx context.Context) {
	jobs := h.c.snapshotRunning()
	for len(jobs) > 0 {
		n := min(len(jobs), heartbeatChunk)
		h.beatChunk(ctx, jobs[:n])
		jobs = jobs[n:]
	}
}

func (h *heartbeater) beatChunk(ctx context.Context, jobs []*runningJob) {
	c := h.c
	refs := make([]driver.LeaseRef, len(jobs))
	for i, rj := range jobs {
		refs[i] = driver.LeaseRef{ID: rj.row.ID, Attempt: rj.row.Attempt}
	}
	bctx, cancel := context.WithTimeout(ctx, c.cfg.HeartbeatInterval)
	defer cancel()
	sent := c.mono()
	held, err := c.driver.Heartbeat(bctx, &driver.HeartbeatParams{Owner: c.owner, TTL: c.cfg.LeaseTTL, Leases: refs})
	if err != nil {
		if ctx.Err() == nil {
			c.stats.heartbeatErrors.Add(1)
			c.cfg.Logger.Warn("leasehold: heartbeat failed", "leases", len(refs), "err", err)
		}
		return
	}
	byID := make(map[int64]*driver.HeartbeatResult, len(held))
	for _, r := range held {
		byID[r.ID] = r
	}
	newest := make(map[int64]int, len(jobs))
	for _, rj := range jobs {
		newest[rj.row.ID] = max(newest[rj.row.ID], rj.row.Attempt)
	}
	for _, rj := range jobs {
		// Results carry ids only; when this client holds two attempts of
		// one job, the older lease is lost by definition.
		r, ok := byID[rj.row.ID]
		switch {
		case !ok || rj.row.Attempt < newest[rj.row.ID]:
			h.lost(rj)
		case r.CancelRequested:
			rj.renewedAt.Store(sent)
			rj.cancel(ErrJobCancelled)
		default:
			rj.renewedAt.Store(sent)
		}
	}
}

// lost cancels a handler whose lease the database no longer holds for us.
func (h *heartbeater) lost(rj *runningJob) {
	if rj.ctx.Err() != nil {
		return // finished (or already cancelled) meanwhile
	}
	rj.lostInDB.Store(true)
	h.c.stats.leaseLost.Add(1)
	rj.cancel(ErrLeaseLost)
}

// watchdogLoop cancels handlers whose lease was not renewed within
// LeaseTTL - LeaseSafetyMargin of the last successful renewal, measured on
// the local monotonic clock from when that renewal was sent (which is no
// later than the database's lease start).
func (h *heartbeater) watchdogLoop(ctx context.Context) {
	c := h.c
	t := time.NewTicker(max(c.cfg.LeaseSafetyMargin/4, time.Millisecond))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		now := c.mono()
		for _, rj := range c.snapshotRunning() {
			if c.overdue(rj, now) >= 0 && rj.ctx.Err() == nil {
				rj.expiredLocally.Store(true)
				c.stats.leaseLost.Add(1)
				c.cfg.Logger.Warn("leasehold: lease not renewed in time; cancelling handler",
					"job", rj.row.ID, "attempt", rj.row.Attempt)
				rj.cancel(ErrLeaseLost)
			}
		}
	}
}
