package engine

import (
	"context"
	"time"

	"github.com/leasehold/leasehold/leasetype"
)

// probeShare spaces the probes out when they are slow: the next comes no
// sooner than this many times the shorter of the last two probes'
// durations after the last one started (probeGap).
const probeShare = 10

// probeLoop runs the probe at once, then every poll interval, or
// probeShare times the shorter of the last two probes' durations when
// that is longer, and one interval after a failed probe (probeGap): behind a
// transaction held open on PostgreSQL, each probe reads the index entries
// of every job claimed since it began, and probing as often as usual would
// spend a core on it (docs/design.md, "Claim cursor").
func (p *Producer) probeLoop(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	var prev time.Duration // the last successful probe's duration
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		began := time.Now()
		ok := p.probe(ctx)
		took := time.Since(began)
		t.Reset(probeGap(took, prev, ok, p.cfg.PollInterval) - took)
		if ok {
			prev = took
		}
	}
}

// probeGap is how long after the start of a probe that took took the next
// one is due, prev being the duration of the successful probe before it
// (0 for none): one poll interval, or probeShare times the shorter of the
// two when that is longer. Two slow probes in a row (every probe is slow
// behind a held transaction) space the next ones out; a probe slowed by a
// one-off (a new connection after a restart or a terminated session, a
// moment of load) puts off the next by no more than one poll interval,
// not by ten times its own duration, which would hold back the takeover
// of expired leases and the claim of jobs the watcher returned. A failed
// probe is tried again after one poll interval.
func probeGap(took, prev time.Duration, ok bool, interval time.Duration) time.Duration {
	if !ok {
		return interval
	}
	return max(interval, probeShare*min(took, prev))
}

// probe asks the database which of the queues have work (due pending jobs,
// or expired leases the queue's claims take over; paused queues never) and
// wakes their loops. It writes nothing, so Stop may cancel it at once. A
// failed probe is logged and tried again at the next interval; wake-up
// hints still wake queues meanwhile. It reports whether the probe
// succeeded.
func (p *Producer) probe(ctx context.Context) bool {
	cctx, cancel := context.WithTimeout(ctx, ClaimTimeout)
	defer cancel()
	names, err := p.cfg.Claimer.ClaimableQueues(cctx, p.probeParams)
	if err != nil {
		if ctx.Err() == nil {
			p.cfg.Logger.Warn("leasehold: looking for queues with jobs failed", "err", err)
			p.cfg.Emit(leasetype.Event{Kind: leasetype.EventClaimFailed, Err: err})
		}
		return false
	}
	for _, name := range names {
		p.Wake(name)
	}
	return true
}
