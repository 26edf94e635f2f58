package engine

import (
	"context"
	"time"

	"github.com/leasehold/leasehold/leasetype"
)

// probeShare spaces the probes out when one is slow: the next comes no
// sooner than this many times the last one's duration after it started.
const probeShare = 10

// probeLoop runs the probe at once, then every poll interval, or every
// probeShare times the last probe's duration when that is longer: behind
// a transaction held open on PostgreSQL, each probe reads the index
// entries of every job claimed since it began, and probing as often as
// usual would spend a core on it (docs/design.md, "Claim cursor").
func (p *Producer) probeLoop(ctx context.Context) {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		began := time.Now()
		p.probe(ctx)
		took := time.Since(began)
		t.Reset(max(p.cfg.PollInterval, probeShare*took) - took)
	}
}

// probe asks the database which of the queues have work (due pending jobs,
// or expired leases the queue's claims take over; paused queues never) and
// wakes their loops. It writes nothing, so Stop may cancel it at once. A
// failed probe is logged and tried again at the next interval; wake-up
// hints still wake queues meanwhile.
func (p *Producer) probe(ctx context.Context) {
	cctx, cancel := context.WithTimeout(ctx, ClaimTimeout)
	defer cancel()
	names, err := p.cfg.Claimer.ClaimableQueues(cctx, p.probeParams)
	if err != nil {
		if ctx.Err() == nil {
			p.cfg.Logger.Warn("leasehold: looking for queues with jobs failed", "err", err)
			p.cfg.Emit(leasetype.Event{Kind: leasetype.EventClaimFailed, Err: err})
		}
		return
	}
	for _, name := range names {
		p.Wake(name)
	}
}
