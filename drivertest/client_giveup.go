package drivertest

import (
	"context"
	"sync"
	"time"

	"github.com/leasehold/leasehold"
)

// testGiveUpKeepsBudgetAndPolicy: a lease the watchdog gives up (its
// heartbeats fail) ends as the queue's policy and the retry budget say, as
// an expired lease does: failed once the budget is spent, and in a FlagStuck
// queue written by the watcher alone (stuck), never made pending by the
// worker that gave it up. Its handler runs once.
func testGiveUpKeepsBudgetAndPolicy(e *clientEnv) {
	fd := &faultDriver{Driver: e.d}
	var mu sync.Mutex
	runs := map[int64]int{}
	started := make(chan struct{}, 2)
	c := e.newClient(fd, e.workers(func(ctx context.Context, job *leasehold.Job[testArgs]) error {
		mu.Lock()
		runs[job.ID]++
		mu.Unlock()
		started <- struct{}{}
		<-ctx.Done()
		return ctx.Err() // what a handler cut off mid-call returns
	}), func(c *leasehold.Config) {
		c.LeaseTTL, c.HeartbeatInterval, c.LeaseSafetyMargin = 1500*time.Millisecond, 300*time.Millisecond, 500*time.Millisecond
		c.WatcherInterval = 50 * time.Millisecond
		c.Queues = map[string]leasehold.QueueConfig{"flagged": {FlagStuck: true}, leasehold.DefaultQueue: {}}
	})
	spent := e.insertOpts(c, &leasehold.InsertOpts{MaxAttempts: 1})
	flagged := e.insertOpts(c, &leasehold.InsertOpts{Queue: "flagged", MaxAttempts: 3})
	for range 2 {
		e.waitGate(started, "the handlers to start")
	}
	fd.cutOff.Store(true)
	for id, want := range map[int64]struct {
		state   leasehold.JobState
		outcome leasehold.Outcome
	}{
		spent:   {leasehold.StateFailed, leasehold.OutcomeFailed},
		flagged: {leasehold.StateStuck, leasehold.OutcomeLeaseExpired},
	} {
		row := e.waitState(id, want.state, 30*time.Second)
		h := e.history(id)
		if row.Attempt != 1 || len(h) != 1 || h[0].Outcome != want.outcome {
			e.Fatalf("job %d -> %s: attempt %d history %s; want one attempt ended %s",
				id, want.state, row.Attempt, fmtHistory(h), want.outcome)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if runs[spent] != 1 || runs[flagged] != 1 {
		e.Fatalf("handler runs: %d of the job whose budget was spent, %d of the flagged one; want 1 each",
			runs[spent], runs[flagged])
	}
}

// testStopLeavesCutOffHandlerToWatcher: a handler that Stop cancels after
// ShutdownTimeout, in a FlagStuck queue, may have been cut off mid-effect
// (a payment request aborted): its lease is not released, so its job does
// not run again blindly; the watcher flags it once the lease has run out.
// In a queue without that policy Stop releases the lease, pending again at
// once, as before.
func testStopLeavesCutOffHandlerToWatcher(e *clientEnv) {
	queues := map[string]leasehold.QueueConfig{"flagged": {FlagStuck: true}, leasehold.DefaultQueue: {}}
	started := make(chan struct{}, 2)
	c := e.newClient(e.d, e.workers(func(ctx context.Context, _ *leasehold.Job[testArgs]) error {
		started <- struct{}{}
		<-ctx.Done()
		return ctx.Err() // what a handler cut off mid-call returns
	}), func(c *leasehold.Config) {
		c.LeaseTTL, c.ShutdownTimeout, c.Queues = 1500*time.Millisecond, 100*time.Millisecond, queues
	})
	plain := e.insertOpts(c, &leasehold.InsertOpts{})
	flagged := e.insertOpts(c, &leasehold.InsertOpts{Queue: "flagged"})
	for range 2 {
		e.waitGate(started, "the handlers to start")
	}
	if err := c.Stop(e.ctx); err != nil {
		e.Fatalf("Stop: %v", err)
	}
	if h := e.history(plain); len(h) != 1 || h[0].Outcome != leasehold.OutcomeReleased {
		e.Fatalf("job in a plain queue after Stop: history %s, want one attempt released", fmtHistory(h))
	}
	if row, err := e.d.GetJob(e.ctx, flagged); err != nil || row.State != leasehold.StateProcessing {
		e.Fatalf("job in a FlagStuck queue right after Stop: %+v, %v; want still processing (its lease left to expire)", row, err)
	}
	ran := make(chan struct{}, 4)
	e.newClient(e.d, e.workers(func(context.Context, *leasehold.Job[testArgs]) error {
		ran <- struct{}{}
		return nil
	}), func(c *leasehold.Config) { c.WatcherInterval, c.Queues = 50*time.Millisecond, queues })
	row := e.waitState(flagged, leasehold.StateStuck, 30*time.Second)
	if h := e.history(flagged); row.Attempt != 1 || len(h) != 1 || h[0].Outcome != leasehold.OutcomeLeaseExpired {
		e.Fatalf("job in a FlagStuck queue: attempt %d, history %s; want one attempt ended lease_expired", row.Attempt, fmtHistory(h))
	}
	e.waitState(plain, leasehold.StateCompleted, 30*time.Second)
	if n := len(ran); n != 1 {
		e.Fatalf("the second client ran %d handlers, want 1 (the released job's)", n)
	}
}
