package leasehold

import "sync/atomic"

// Stats are counters of what a client has done since it was created.
type Stats struct {
	Claimed   int64 // leases taken by this client's fetchers
	Completed int64 // jobs completed (fenced write applied)
	Retried   int64 // failures scheduled for another attempt
	Failed    int64 // jobs failed for good
	Snoozed   int64 // jobs snoozed by their handler
	Cancelled int64 // jobs cancelled (operator or handler)
	Released  int64 // leases given back unrun: at shutdown, or claimed too late to start
	// LeaseLost counts handlers cancelled because their lease was gone
	// (heartbeat found it taken over) or could not be renewed in time.
	LeaseLost int64
	// FinishRefused counts fenced writes (completions, retries...) that the
	// database refused because the lease was no longer this client's: late
	// completions that changed nothing.
	FinishRefused   int64
	HeartbeatErrors int64 // heartbeat statements that failed
	FinishErrors    int64 // finish statements that failed and were retried
	// OutcomesDropped counts outcomes given up unwritten: refused by the
	// database every time, or still unwritten when Stop's budget ran out.
	// Their leases expire and the watcher returns their jobs.
	OutcomesDropped int64
	Rescued         int64 // expired leases moved by this client's watcher
	Panics          int64 // handler panics recovered
	Running         int64 // handlers running now
	// SkippedLate counts claimed jobs whose handler was not started
	// because LeaseTTL - LeaseSafetyMargin had passed (on the client's
	// monotonic clock, since the claim was sent) by the time it would have
	// started, or the lease was already lost: a late claim reply must not
	// run a handler another worker may already be running. Their leases
	// are released (fenced: refused if another worker has the job).
	SkippedLate int64
}

type stats struct {
	claimed, completed, retried, failed, snoozed, cancelled, released atomic.Int64
	leaseLost, finishRefused, heartbeatErrors, finishErrors, dropped  atomic.Int64
	rescued, panics, running                                          atomic.Int64
	skippedLate                                                       atomic.Int64
}

// Stats returns a snapshot of the client's counters.
func (c *Client) Stats() Stats {
	s := &c.stats
	return Stats{
		Claimed: s.claimed.Load(), Completed: s.completed.Load(), Retried: s.retried.Load(),
		Failed: s.failed.Load(), Snoozed: s.snoozed.Load(), Cancelled: s.cancelled.Load(),
		Released: s.released.Load(), LeaseLost: s.leaseLost.Load(), FinishRefused: s.finishRefused.Load(),
		HeartbeatErrors: s.heartbeatErrors.Load(), FinishErrors: s.finishErrors.Load(),
		OutcomesDropped: s.dropped.Load(),
		Rescued:         s.rescued.Load(), Panics: s.panics.Load(), Running: s.running.Load(),
		SkippedLate: s.skippedLate.Load(),
	}
}

// countApplied records an outcome whose fenced write was applied.
func (s *stats) countApplied(o Outcome) {
	switch o {
	case OutcomeCompleted:
		s.completed.Add(1)
	case OutcomeRetried:
		s.retried.Add(1)
	case OutcomeFailed:
		s.failed.Add(1)
	case OutcomeSnoozed:
		s.snoozed.Add(1)
	case OutcomeCancelled:
		s.cancelled.Add(1)
	case OutcomeReleased, OutcomeLeaseLost:
		s.released.Add(1)
	}
}
