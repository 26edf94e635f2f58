package leasehold

import "sync/atomic"

// Stats are counters of what a client has done since it was created. They
// are built on the client's events (see Subscribe): each field says which.
// Completed, Retried, Failed, Snoozed and Cancelled count the resolutions
// of the client's reconcile jobs too (ResolveReconcile: an EventFinished
// with ResolvedBy set), each as the outcome it gave the reconciled job.
type Stats struct {
	Claimed   int64 // leases taken by this client's fetchers (EventClaimed)
	Completed int64 // jobs completed: fenced write applied (EventFinished, completed)
	Retried   int64 // failures scheduled for another attempt (EventFinished, retried)
	Failed    int64 // jobs failed for good (EventFinished, failed, State failed)
	Snoozed   int64 // jobs snoozed by their handler (EventFinished, snoozed)
	Cancelled int64 // jobs cancelled: operator, handler, or a retry, snooze or release (by a handler, a resolution, a shutdown or a give-up) that met a cancel request (EventFinished, cancelled, State cancelled)
	// Flagged counts reconcile jobs that gave up (their budget spent, a
	// permanent error, a cancel their handler returned) and were flagged
	// stuck for an operator instead of failed or cancelled (EventFinished,
	// State stuck).
	Flagged int64
	// Released counts leases given back unrun or given up: at shutdown,
	// claimed too late to start, left by a claim whose reply was lost, or
	// not renewed in time (EventFinished, released or lease_lost).
	Released int64
	// LeaseLost counts handlers cancelled because their lease was gone
	// (heartbeat found it taken over) or could not be renewed in time
	// (EventLeaseLost).
	LeaseLost int64
	// FinishRefused counts fenced writes (completions, retries...) that the
	// database refused because the lease was no longer this client's: late
	// completions that changed nothing (EventFenceRefused: a refused
	// CompleteTx is one, counted when its handler returns).
	FinishRefused   int64
	HeartbeatErrors int64 // heartbeat statements that failed (EventHeartbeatFailed)
	FinishErrors    int64 // finish statements that failed and were retried (EventFinishFailed)
	ClaimErrors     int64 // claim and probe statements that failed (EventClaimFailed)
	// OutcomesDropped counts outcomes given up unwritten: refused by the
	// database every time, or still unwritten when Stop's budget ran out.
	// Their leases expire and the watcher returns their jobs
	// (EventOutcomeDropped).
	OutcomesDropped int64
	Rescued         int64 // expired leases moved by this client's watcher (EventRescued)
	// TakenOver counts expired leases this client's fetchers took over in
	// their claims, each ending the expired attempt as lease_expired
	// (EventTakenOver). Summed over every client, with Rescued, it counts
	// the attempts whose lease expired.
	TakenOver int64
	// Panics counts the panics the client recovered: in a handler or a
	// work middleware (the attempt fails with a *PanicError), while
	// reading a handler's error or its retry policy, and in a periodic
	// job's Args or an insert middleware run for one of its slots
	// (logged with a *PanicError; the slot is refused unless its job was
	// written already).
	Panics  int64
	Running int64 // handlers running now, or claimed and about to run
	// SkippedLate counts claimed jobs whose handler was not started
	// because LeaseTTL - LeaseSafetyMargin had passed (on the client's
	// monotonic clock, since the claim was sent) by the time it would have
	// started, or the lease was already lost: a late claim reply must not
	// run a handler another worker may already be running. Their leases
	// are released (fenced: refused if another worker has the job)
	// (EventNotStarted).
	SkippedLate int64
	// ClaimedAgain counts claims that returned a lease this client held
	// already, the same job and attempt, because the database had lost
	// the claim that gave it (a standby promoted after an asynchronous
	// failover): the running handler kept the job (EventClaimedAgain).
	ClaimedAgain int64
	// EventsDropped counts events a subscriber missed because its channel
	// was full.
	EventsDropped int64
}

type stats struct {
	claimed, completed, retried, failed, snoozed, cancelled, released atomic.Int64
	leaseLost, finishRefused, heartbeatErrors, finishErrors, dropped  atomic.Int64
	rescued, panics, skippedLate, eventsDropped, claimedAgain         atomic.Int64
	claimErrors, flagged, takenOver                                   atomic.Int64
}

// Stats returns a snapshot of the client's counters.
func (c *Client) Stats() Stats {
	s := &c.events.stats
	st := Stats{
		Claimed: s.claimed.Load(), Completed: s.completed.Load(), Retried: s.retried.Load(),
		Failed: s.failed.Load(), Snoozed: s.snoozed.Load(), Cancelled: s.cancelled.Load(), Flagged: s.flagged.Load(),
		Released: s.released.Load(), LeaseLost: s.leaseLost.Load(), FinishRefused: s.finishRefused.Load(),
		HeartbeatErrors: s.heartbeatErrors.Load(), FinishErrors: s.finishErrors.Load(), ClaimErrors: s.claimErrors.Load(),
		OutcomesDropped: s.dropped.Load(), Rescued: s.rescued.Load(), TakenOver: s.takenOver.Load(), Panics: s.panics.Load(),
		SkippedLate: s.skippedLate.Load(), EventsDropped: s.eventsDropped.Load(), ClaimedAgain: s.claimedAgain.Load(),
	}
	c.mu.Lock()
	if c.executor != nil {
		st.Running = c.executor.Running()
	}
	c.mu.Unlock()
	return st
}

// observe counts one event.
func (s *stats) observe(ev *Event) {
	switch ev.Kind {
	case EventClaimed:
		s.claimed.Add(1)
	case EventNotStarted:
		s.skippedLate.Add(1)
	case EventClaimedAgain:
		s.claimedAgain.Add(1)
	case EventFinished:
		s.countApplied(ev)
	case EventFenceRefused:
		s.finishRefused.Add(1)
	case EventOutcomeDropped:
		s.dropped.Add(1)
	case EventLeaseLost:
		s.leaseLost.Add(1)
	case EventHeartbeatFailed:
		s.heartbeatErrors.Add(1)
	case EventFinishFailed:
		s.finishErrors.Add(1)
	case EventClaimFailed:
		s.claimErrors.Add(1)
	case EventRescued:
		s.rescued.Add(1)
	case EventTakenOver:
		s.takenOver.Add(1)
	}
}

// countApplied records an outcome whose fenced write was applied.
func (s *stats) countApplied(ev *Event) {
	if ev.State == StateStuck {
		s.flagged.Add(1)
		return
	}
	switch ev.Outcome {
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
