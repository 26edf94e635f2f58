package engine

import (
	"context"
	"time"
)

// probeLoop runs the probe at once, then every poll interval.
func (p *Producer) probeLoop(ctx context.Context) {
	t := time.NewTicker(p.cfg.PollInterval)
	defer t.Stop()
	for {
		p.probe(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
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
		}
		return
	}
	for _, name := range names {
		p.Wake(name)
	}
}
