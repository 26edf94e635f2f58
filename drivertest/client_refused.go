package drivertest

import (
	"context"
	"time"

	"github.com/leasehold/leasehold"
)

// testRefusedOutcomeIsolated: an outcome the database refuses every time
// holds back only itself. The other outcomes of its batch are written; it
// is given up, its lease expires, and the job runs again.
func testRefusedOutcomeIsolated(e *clientEnv) {
	const n = 40
	f := &faultDriver{Driver: e.d}
	release := make(chan struct{})
	c := e.newClient(f, e.workers(func(ctx context.Context, job *leasehold.Job[testArgs]) error {
		select { // hold the first attempts so that their outcomes come in one batch
		case <-release:
		case <-ctx.Done():
		}
		return nil
	}), nil)
	ids := make([]int64, n)
	for i := range ids {
		ids[i] = e.insertOpts(c, nil)
	}
	poisoned := ids[n/2]
	f.refuse.Store(poisoned)
	e.waitFor("every job to start", 30*time.Second, func() bool { return c.Stats().Running == n })
	close(release)

	e.waitFor("the other outcomes to be written", 20*time.Second, func() bool { return c.Stats().Completed >= n-1 })
	for _, id := range ids {
		if id != poisoned {
			if row, _ := e.d.GetJob(e.ctx, id); row == nil || row.State != leasehold.StateCompleted {
				e.Fatalf("job %d: %+v, want completed", id, row)
			}
		}
	}
	e.waitState(poisoned, leasehold.StateCompleted, 30*time.Second)
	h := e.history(poisoned)
	if len(h) != 2 || h[0].Outcome != leasehold.OutcomeLeaseExpired || h[1].Outcome != leasehold.OutcomeCompleted {
		e.Fatalf("refused job's history %s; want its first lease expired, its second completed", fmtHistory(h))
	}
	if got := f.refused.Load(); got < 3 {
		e.Fatalf("Finish refused %d times, want at least 3 (the batch, then the outcome alone)", got)
	}
	if got := c.Stats().OutcomesDropped; got != 1 {
		e.Fatalf("OutcomesDropped = %d, want 1", got)
	}
}

// testRefusedOutcomeAlone: an outcome the database refuses every time, with
// no other outcome to show that the database is up (the only job of the
// client), is given up once a heartbeat has renewed its lease since it
// first failed: its lease expires and the job runs again, instead of the
// outcome being retried, and its lease renewed, until Stop.
func testRefusedOutcomeAlone(e *clientEnv) {
	f := &faultDriver{Driver: e.d}
	armed := make(chan struct{})
	c := e.newClient(f, e.workers(func(ctx context.Context, _ *leasehold.Job[testArgs]) error {
		select { // until the job's first outcome is sure to be refused
		case <-armed:
		case <-ctx.Done():
		}
		return nil
	}), nil)
	id := e.insertOpts(c, nil)
	f.refuse.Store(id)
	close(armed)
	e.waitState(id, leasehold.StateCompleted, 20*time.Second)
	h := e.history(id)
	if len(h) != 2 || h[0].Outcome != leasehold.OutcomeLeaseExpired || h[1].Outcome != leasehold.OutcomeCompleted {
		e.Fatalf("refused job's history %s; want its first lease expired, its second completed", fmtHistory(h))
	}
	if got := c.Stats().OutcomesDropped; got != 1 {
		e.Fatalf("OutcomesDropped = %d, want 1", got)
	}
}
