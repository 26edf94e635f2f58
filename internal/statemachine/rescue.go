package statemachine

import (
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/leasetype"
)

// Rescue returns the transition of job, a processing job whose lease
// expired; flagged says whether its queue flags expired jobs as stuck
// rather than requeueing them. In order of precedence the job becomes
// cancelled when an operator asked for it, stuck when flagged (whatever
// its retry budget: the expired attempt may have had an effect, and an
// operator must decide, not a failure that hides it), failed when its
// retry budget is spent (the expired attempt counts), and pending
// otherwise. It keeps its run_at (a requeued job keeps its place in line),
// the attempt is charged, and last_error and the attempt row's error say
// whose lease expired; the attempt row ends with lease_expired.
func Rescue(job *leasetype.JobRow, flagged bool) driver.Transition {
	var state leasetype.JobState
	switch {
	case job.CancelRequested:
		state = leasetype.StateCancelled
	case flagged:
		state = leasetype.StateStuck
	case job.ChargedAttempts() >= job.MaxAttempts:
		state = leasetype.StateFailed
	default:
		state = leasetype.StatePending
	}
	text := "lease expired (owner " + job.LeaseOwner + ")"
	return driver.Transition{
		State:        state,
		KeepRunAt:    true,
		LastError:    text,
		Finished:     state.Finished(),
		Outcome:      leasetype.OutcomeLeaseExpired,
		AttemptError: text,
	}
}

// Rescuer returns the RescueParams.Decide of a watcher whose queues in
// flagQueues flag expired jobs as stuck.
func Rescuer(flagQueues []string) func(*leasetype.JobRow) driver.Transition {
	flagged := make(map[string]bool, len(flagQueues))
	for _, q := range flagQueues {
		flagged[q] = true
	}
	return func(job *leasetype.JobRow) driver.Transition {
		return Rescue(job, flagged[job.Queue])
	}
}
