package engine

import (
	"context"
	"log/slog"
	"time"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/service"
	"github.com/leasehold/leasehold/leasetype"
)

// heartbeatChunk caps the leases renewed by one statement (one
// transaction), which bounds how long it holds their row locks (about
// 14-18 µs a lease on PostgreSQL: a third of a second for a full chunk;
// docs/benchmarks.md). Below it, a client renews all its leases with
// one statement per interval, however many it holds. The statement skips
// rows another transaction holds (a handler's business transaction):
// their leases come back Locked, not renewed.
const heartbeatChunk = 20_000

// Renewer is the part of the driver the heartbeater calls.
type Renewer interface {
	Heartbeat(ctx context.Context, p *driver.HeartbeatParams) ([]*driver.HeartbeatResult, error)
}

// HeartbeaterConfig is what a Heartbeater needs.
type HeartbeaterConfig struct {
	Renewer  Renewer
	Leases   *Leases
	Window   *Window
	Owner    string
	Interval time.Duration
	Emit     Emit
	Logger   *slog.Logger
}

// Heartbeater renews every lease of the set in one statement per
// interval (one per heartbeatChunk leases), and runs the watchdog that gives up leases it could not renew
// within their safe window (docs/design.md, invariant 9).
type Heartbeater struct {
	cfg  HeartbeaterConfig
	life service.Lifecycle
}

// NewHeartbeater returns a heartbeater.
func NewHeartbeater(cfg HeartbeaterConfig) *Heartbeater { return &Heartbeater{cfg: cfg} }

// Start launches the renewal loop and the watchdog.
func (h *Heartbeater) Start(context.Context) error {
	ctx, err := h.life.Begin()
	if err != nil {
		return err
	}
	h.life.Go(func() { h.renewLoop(ctx) })
	h.life.Go(func() { h.watchdogLoop(ctx) })
	return nil
}

// Stop ends both loops.
func (h *Heartbeater) Stop(ctx context.Context) error { return h.life.Stop(ctx, nil) }

func (h *Heartbeater) renewLoop(ctx context.Context) {
	t := time.NewTicker(h.cfg.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			h.Beat(ctx)
		}
	}
}

// Beat renews all held leases and cancels the handlers of lost ones.
func (h *Heartbeater) Beat(ctx context.Context) {
	leases := h.cfg.Leases.Snapshot()
	for len(leases) > 0 {
		n := min(len(leases), heartbeatChunk)
		h.beatChunk(ctx, leases[:n])
		leases = leases[n:]
	}
}

func (h *Heartbeater) beatChunk(ctx context.Context, leases []*Lease) {
	refs := make([]driver.LeaseRef, len(leases))
	for i, l := range leases {
		refs[i] = l.Ref()
	}
	bctx, cancel := context.WithTimeout(ctx, h.cfg.Interval)
	defer cancel()
	sent := h.cfg.Window.Clock.Now()
	held, err := h.cfg.Renewer.Heartbeat(bctx, &driver.HeartbeatParams{Owner: h.cfg.Owner, TTL: h.cfg.Window.TTL, Leases: refs})
	if err != nil {
		if ctx.Err() == nil {
			h.cfg.Emit(leasetype.Event{Kind: leasetype.EventHeartbeatFailed, Leases: len(refs), Err: err})
			h.cfg.Logger.Warn("leasehold: heartbeat failed", "leases", len(refs), "err", err)
		}
		return
	}
	h.cfg.Emit(leasetype.Event{Kind: leasetype.EventHeartbeat, Leases: len(refs),
		Duration: time.Duration(h.cfg.Window.Clock.Now() - sent)})
	byID := make(map[int64]*driver.HeartbeatResult, len(held))
	for _, r := range held {
		byID[r.ID] = r
	}
	newest := make(map[int64]int, len(leases))
	for _, l := range leases {
		newest[l.Row.ID] = max(newest[l.Row.ID], l.Row.Attempt)
	}
	for _, l := range leases {
		r, ok := byID[l.Row.ID]
		// Results carry ids only; when this client holds two attempts of
		// one job, the older lease is lost by definition.
		h.settle(l, r, ok && l.Row.Attempt == newest[l.Row.ID], sent)
	}
}

// settle applies one lease's heartbeat result r, sent at sent; held is
// false when the answer left the lease out, or when the client holds a
// newer attempt of its job.
func (h *Heartbeater) settle(l *Lease, r *driver.HeartbeatResult, held bool, sent int64) {
	switch {
	case r == nil && l.completedInTx.Load():
		// A CompleteTx of this lease committed: the job is completed,
		// not taken over. Nothing to renew; the watchdog still stops
		// a handler that outlives the safe window.
	case !held:
		h.lost(l)
	case r.Locked:
		// Held, but another transaction has the row (the handler's
		// own, after FenceTx or CompleteTx): not renewed this time.
		// The watchdog stops the handler if that outlasts the
		// lease's safe window.
		h.cfg.Logger.Debug("leasehold: lease not renewed: another transaction holds its job row",
			"job", l.Row.ID, "attempt", l.Row.Attempt)
		if r.CancelRequested {
			l.cancel(leasetype.ErrJobCancelled)
		}
	case r.CancelRequested:
		l.renewedAt.Store(sent)
		l.cancel(leasetype.ErrJobCancelled)
	default:
		l.renewedAt.Store(sent)
	}
}

// lost cancels a handler whose lease the database no longer holds for us.
func (h *Heartbeater) lost(l *Lease) {
	if l.ctx.Err() != nil || !l.end(endLost) {
		return // finished, already cancelled, or given up by the watchdog meanwhile
	}
	h.cfg.Emit(leasetype.Event{Kind: leasetype.EventLeaseLost, Job: l.Row, Err: leasetype.ErrLeaseLost})
	l.cancel(leasetype.ErrLeaseLost)
}

// watchdogLoop cancels handlers whose lease was not renewed within its
// safe window of the last successful renewal, measured on the local
// monotonic clock from when that renewal was sent (which is no later than
// the database's lease start). It wakes when the earliest safe window of
// the running leases ends, not on a fixed tick, so that none of the
// margin is spent waiting for a tick: what is left of it covers the
// runtime's wake-up latency (timers fire on a millisecond grid when the
// process is idle, later on a busy machine) and the handler's reaction.
// A lease claimed while it sleeps is not announced to it, so it also
// wakes every watchdogPoll to see new leases; a claim comes back long
// before its safe window ends, so the poll finds them in time (and the
// executor starts no handler on a claim that came back later).
func (h *Heartbeater) watchdogLoop(ctx context.Context) {
	poll := watchdogPoll(h.cfg.Window.Margin)
	t := time.NewTimer(poll)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		wait := poll
		if next, ok := h.expireOverdue(); ok {
			wait = min(wait, time.Duration(next-h.cfg.Window.Clock.Now()))
		}
		t.Reset(max(wait, 0))
	}
}

// watchdogPoll is how often the watchdog looks for leases claimed since
// it last looked: a quarter of the margin, at least a millisecond.
func watchdogPoll(margin time.Duration) time.Duration { return max(margin/4, time.Millisecond) }

// expireOverdue gives up every running lease past its safe window, and
// returns the Clock reading at which the earliest safe window of the
// running leases left ends (ok false when none is running).
func (h *Heartbeater) expireOverdue() (next int64, ok bool) {
	now := h.cfg.Window.Clock.Now()
	for _, l := range h.cfg.Leases.Snapshot() {
		if l.ctx.Err() != nil {
			continue // finished or cancelled: nothing left to stop
		}
		late := h.cfg.Window.Overdue(l, now)
		if late < 0 {
			if end := now - int64(late); !ok || end < next {
				next, ok = end, true
			}
			continue
		}
		if !l.end(endExpired) {
			continue // found lost, or its handler returned, meanwhile
		}
		h.cfg.Emit(leasetype.Event{Kind: leasetype.EventLeaseLost, Job: l.Row, Err: errNotRenewed})
		h.cfg.Logger.Warn("leasehold: lease not renewed in time; cancelling handler",
			"job", l.Row.ID, "attempt", l.Row.Attempt)
		l.cancel(errNotRenewed)
	}
	return next, ok
}
