package drivertest

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/leasehold/leasehold"
)

// testLostClaimReclaimed: the database loses the commit of a claim whose
// handler is running (an asynchronous standby promoted without it: the
// job is pending again, at its previous attempt), and the same client
// claims the job again, with the same fence. The running handler keeps
// the job: no second handler starts, the lease is renewed, and the first
// handler's completion is written, once.
func testLostClaimReclaimed(e *clientEnv) {
	if e.h.LoseClaim == nil {
		e.Skip("harness has no LoseClaim")
	}
	fd := &faultDriver{Driver: e.d}
	g := newGate()
	var runs atomic.Int32
	c := e.newClient(fd, e.workers(func(ctx context.Context, job *leasehold.Job[testArgs]) error {
		runs.Add(1)
		g.markStarted()
		<-g.release // ignores ctx, like a payment call in flight
		return nil
	}), nil)
	id := e.insertOpts(c, nil)
	e.waitGate(g.started, "the handler to start")
	// No heartbeat may see the job pending meanwhile: it would find the
	// lease lost and cancel the handler, which is another case.
	fd.cutOff.Store(true)
	e.h.LoseClaim(e.T, e.d, id)
	e.waitFor("the job to be claimed again", 10*time.Second, func() bool {
		row, err := e.d.GetJob(e.ctx, id)
		return err == nil && row.State == leasehold.StateProcessing && row.Attempt == 1
	})
	fd.cutOff.Store(false)
	e.waitFor("a heartbeat to renew the lease claimed again", 10*time.Second, func() bool {
		row, err := e.d.GetJob(e.ctx, id)
		return err == nil && row.State == leasehold.StateProcessing && !row.HeartbeatAt.IsZero()
	})
	if n := runs.Load(); n != 1 {
		e.Fatalf("the handler started %d times for one lease; want 1 (the claim again must not start another)", n)
	}
	close(g.release)
	e.waitState(id, leasehold.StateCompleted, 30*time.Second)
	if n := runs.Load(); n != 1 {
		e.Fatalf("the handler ran %d times; want 1", n)
	}
	h := e.history(id)
	if len(h) != 1 || h[0].Attempt != 1 || h[0].Outcome != leasehold.OutcomeCompleted || h[0].Owner != c.Owner() {
		e.Fatalf("history = %s; want attempt 1 completed by %q", fmtHistory(h), c.Owner())
	}
	if st := c.Stats(); st.Completed != 1 || st.Running != 0 || st.ClaimedAgain != 1 || st.Claimed != 1 {
		e.Fatalf("stats: completed %d, running %d, claimed again %d, claimed %d; want 1, 0, 1 and 1",
			st.Completed, st.Running, st.ClaimedAgain, st.Claimed)
	}
}

// testSettlingOutcomeNotRunAgain: after a handler returned, the database
// takes neither its outcome nor a heartbeat for longer than the TTL (an
// outage, for these writes; the claims and the watcher still reach it,
// as whichever comes back first after a real one does). The client takes
// its own expired lease over in no claim and moves it in no watcher pass,
// since its outcome waits in its completer: the handler runs once, and
// its completion is written once the database takes writes again.
func testSettlingOutcomeNotRunAgain(e *clientEnv) {
	fd := &faultDriver{Driver: e.d}
	var runs atomic.Int32
	c := e.newClient(fd, e.workers(func(ctx context.Context, job *leasehold.Job[testArgs]) error {
		if runs.Add(1) == 1 {
			fd.cutOff.Store(true)
			fd.holdFinish.Store(true)
		}
		return nil // a payment charged
	}), func(c *leasehold.Config) {
		c.LeaseTTL, c.HeartbeatInterval, c.LeaseSafetyMargin = 1500*time.Millisecond, 300*time.Millisecond, 500*time.Millisecond
		c.WatcherInterval, c.PollInterval = 50*time.Millisecond, 50*time.Millisecond
	})
	id := e.insertOpts(c, nil)
	e.waitExpired(id)
	// Thirty watcher passes and claim polls with the lease expired.
	deadline := time.Now().Add(1500 * time.Millisecond)
	for time.Now().Before(deadline) && runs.Load() < 2 {
		time.Sleep(10 * time.Millisecond)
	}
	fd.holdFinish.Store(false)
	fd.cutOff.Store(false)
	row := e.waitState(id, leasehold.StateCompleted, 30*time.Second)
	if n := runs.Load(); n != 1 || row.Attempt != 1 {
		e.Fatalf("the handler ran %d times, attempt %d; want once, attempt 1 (its completion waited in the completer)", n, row.Attempt)
	}
	h := e.history(id)
	if len(h) != 1 || h[0].Outcome != leasehold.OutcomeCompleted || h[0].Owner != c.Owner() {
		e.Fatalf("history = %s; want attempt 1 completed by %q", fmtHistory(h), c.Owner())
	}
}
