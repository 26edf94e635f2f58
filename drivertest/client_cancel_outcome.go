package drivertest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/leasehold/leasehold"
)

// testClientCancelledAttemptReported: an operator cancels two running
// jobs whose handlers then return, before any heartbeat tells the worker,
// one a retryable error and one a snooze. Neither job runs again: each is
// cancelled, and the attempt is reported as what it came to, not as what
// the handler asked for: its history row ended cancelled, its
// EventFinished outcome cancelled and state cancelled, Stats counting
// two cancelled and nothing retried or snoozed, and the per-minute totals
// two cancelled attempts.
func testClientCancelledAttemptReported(e *clientEnv) {
	started, release := make(chan struct{}, 4), make(chan struct{})
	c := e.newClient(e.d, e.workers(func(_ context.Context, job *leasehold.Job[testArgs]) error {
		started <- struct{}{}
		<-release
		if job.Args.N == 1 {
			return errors.New("boom") // retryable: the job would run again
		}
		return leasehold.Snooze(time.Hour)
	}), func(c *leasehold.Config) { c.LeaseTTL = 30 * time.Second }) // heartbeats every 10 s
	finished, stop := c.Subscribe(leasehold.EventFinished)
	defer stop()
	var ids []int64
	for n := 1; n <= 2; n++ {
		res, err := c.Insert(e.ctx, testArgs{N: n}, nil)
		if err != nil {
			e.Fatalf("Insert: %v", err)
		}
		ids = append(ids, res.Job.ID)
	}
	e.waitGate(started, "the first handler to start")
	e.waitGate(started, "the second handler to start")
	for _, id := range ids {
		if row, err := c.CancelJob(e.ctx, id); err != nil || !row.CancelRequested {
			e.Fatalf("CancelJob(processing) = %+v, %v; want cancel requested", row, err)
		}
	}
	close(release)
	events := map[int64]leasehold.Event{}
	e.waitFor("an EventFinished of each job", 30*time.Second, func() bool {
		for _, ev := range drain(finished) {
			events[ev.Job.ID] = ev
		}
		return len(events) == len(ids)
	})
	for _, id := range ids {
		row := e.waitState(id, leasehold.StateCancelled, 10*time.Second)
		if h := e.history(id); row.Attempt != 1 || len(h) != 1 || h[0].Outcome != leasehold.OutcomeCancelled {
			e.Errorf("job %d: attempt %d, history %s; want one attempt, ended cancelled", id, row.Attempt, fmtHistory(h))
		}
		if ev := events[id]; ev.Outcome != leasehold.OutcomeCancelled || ev.State != leasehold.StateCancelled {
			e.Errorf("job %d: EventFinished outcome %s, state %s; want cancelled, cancelled", id, ev.Outcome, ev.State)
		}
	}
	if st := c.Stats(); st.Cancelled != 2 || st.Retried != 0 || st.Snoozed != 0 {
		e.Errorf("Stats: cancelled %d, retried %d, snoozed %d; want 2, 0, 0", st.Cancelled, st.Retried, st.Snoozed)
	}
	if n := len(started); n != 0 {
		e.Errorf("a handler ran %d more times after the cancel", n)
	}
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	if err := c.Stop(ctx); err != nil {
		e.Fatalf("Stop: %v", err)
	}
	got := e.throughputTotals(e.newClient(e.h.OpenSecond(e.T, e.d), nil, nil))
	if want := map[string]int64{leasehold.DefaultQueue + "/cancelled": 2}; fmt.Sprint(got) != fmt.Sprint(want) {
		e.Errorf("recorded throughput = %v, want %v", got, want)
	}
}
