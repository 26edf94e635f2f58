package drivertest

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/statemachine"
)

// oneWorker limits a client's default queue to one running job.
func oneWorker(c *leasehold.Config) {
	c.Queues = map[string]leasehold.QueueConfig{leasehold.DefaultQueue: {MaxWorkers: 1}}
}

// testTakeoverRefusesLateCompletion: worker A is cut off from heartbeats,
// its lease expires, worker B takes the job over (attempt 2), then A
// finishes: its CompleteTx and its completion are refused, and B's
// completion stands.
func testTakeoverRefusesLateCompletion(e *clientEnv) {
	fd := &faultDriver{Driver: e.d}
	gA, gB := newGate(), newGate()
	lateErrC := make(chan error, 1)
	var aRef atomic.Pointer[leasehold.Client]
	a := e.newClient(fd, e.workers(func(ctx context.Context, job *leasehold.Job[testArgs]) error {
		gA.markStarted()
		<-gA.release // ignores ctx, like a stalled outside call
		if len(e.h.TxKinds) > 0 {
			tx, _, rollback := e.h.TxKinds[0].Begin(e.T, e.d)
			err := aRef.Load().CompleteTx(context.Background(), tx, job.JobRow)
			_ = rollback() // before the send: the test's cleanup rolls back too, after the receive
			lateErrC <- err
		}
		return nil
	}), func(c *leasehold.Config) { oneWorker(c); c.LeaseTTL = time.Second })
	aRef.Store(a)
	res, err := a.Insert(e.ctx, testArgs{N: 1}, nil)
	if err != nil {
		e.Fatalf("Insert: %v", err)
	}
	id := res.Job.ID
	e.waitGate(gA.started, "worker A to start")
	fd.cutOff.Store(true)
	e.waitExpired(id)

	b := e.newClient(e.d, e.workers(func(ctx context.Context, job *leasehold.Job[testArgs]) error {
		gB.markStarted()
		<-gB.release
		return nil
	}), nil)
	e.waitGate(gB.started, "worker B to take the job over")
	row, _ := e.d.GetJob(e.ctx, id)
	if row.Attempt != 2 || row.LeaseOwner != b.Owner() {
		e.Fatalf("after takeover: attempt %d owner %q; want 2 and %q", row.Attempt, row.LeaseOwner, b.Owner())
	}
	refused, unsubscribe := a.Subscribe(leasehold.EventFenceRefused)
	defer unsubscribe()
	close(gA.release)
	e.waitFor("A's late completion to be refused", 30*time.Second, func() bool { return a.Stats().FinishRefused >= 1 })
	select {
	case ev := <-refused:
		if ev.Outcome != leasehold.OutcomeCompleted || ev.State != leasehold.StateCompleted {
			e.Errorf("A's refused completion event: outcome %s, state %q; want completed, completed", ev.Outcome, ev.State)
		}
	case <-time.After(10 * time.Second):
		e.Errorf("no EventFenceRefused for A's late completion")
	}
	if len(e.h.TxKinds) > 0 {
		if err := <-lateErrC; !errors.Is(err, leasehold.ErrLeaseLost) {
			e.Fatalf("late CompleteTx = %v, want ErrLeaseLost", err)
		}
	}
	row, _ = e.d.GetJob(e.ctx, id)
	if row.State != leasehold.StateProcessing || row.Attempt != 2 || row.LeaseOwner != b.Owner() {
		e.Fatalf("late completion changed the job: %+v", row)
	}
	close(gB.release)
	e.waitState(id, leasehold.StateCompleted, 30*time.Second)
	h := e.history(id)
	if len(h) != 2 || h[0].Outcome != leasehold.OutcomeLeaseExpired || h[1].Outcome != leasehold.OutcomeCompleted ||
		h[1].Owner != b.Owner() {
		e.Fatalf("history = %s; want lease_expired by A then completed by B", fmtHistory(h))
	}
}

// waitExpired waits until job id's lease has expired by the database clock.
func (e *clientEnv) waitExpired(id int64) {
	e.Helper()
	e.waitFor("the lease to expire", time.Minute, func() bool {
		row, err := e.d.GetJob(e.ctx, id)
		if err != nil {
			e.Fatalf("GetJob: %v", err)
		}
		now, err := e.d.Now(e.ctx)
		if err != nil {
			e.Fatalf("Now: %v", err)
		}
		return row.State != leasehold.StateProcessing || now.After(row.LeaseUntil.Add(slack))
	})
}

// testLongJobKeptByHeartbeats: a job that runs twice its TTL keeps its
// lease through heartbeats while a competing client with an eager watcher
// looks for work; it runs once and completes on attempt 1. The TTL is 3 s,
// so a heartbeat may come up to 2 s late (a CI machine whose two cores
// run every test package at once under -race) before the rival may take
// the job over.
func testLongJobKeptByHeartbeats(e *clientEnv) {
	const ttl = 3 * time.Second
	started := make(chan struct{})
	a := e.newClient(e.d, e.workers(func(ctx context.Context, job *leasehold.Job[testArgs]) error {
		close(started)
		claimed := job.LeaseUntil.Add(-ttl)
		for {
			now, err := e.d.Now(ctx)
			if err != nil {
				return err
			}
			if now.After(claimed.Add(2 * ttl)) {
				return nil
			}
			select {
			case <-ctx.Done():
				return context.Cause(ctx)
			case <-time.After(50 * time.Millisecond):
			}
		}
	}), func(c *leasehold.Config) { c.LeaseTTL = ttl })
	res, err := a.Insert(e.ctx, testArgs{N: 1}, nil)
	if err != nil {
		e.Fatalf("Insert: %v", err)
	}
	e.waitGate(started, "the long job to start")
	rival := e.newClient(e.h.OpenSecond(e.T, e.d), e.workers(func(context.Context, *leasehold.Job[testArgs]) error {
		e.Errorf("rival worker ran the long job: its lease was lost")
		return nil
	}), func(c *leasehold.Config) {
		c.LeaseTTL, c.WatcherInterval, c.PollInterval = ttl, 100*time.Millisecond, 100*time.Millisecond
	})
	row := e.waitState(res.Job.ID, leasehold.StateCompleted, time.Minute)
	if row.Attempt != 1 || a.Stats().LeaseLost != 0 || rival.Stats().Rescued != 0 {
		e.Fatalf("long job: attempt %d, lease lost %d, rescued %d; want 1, 0, 0",
			row.Attempt, a.Stats().LeaseLost, rival.Stats().Rescued)
	}
	h := e.history(res.Job.ID)
	if len(h) != 1 || h[0].HeartbeatAt.IsZero() || !h[0].HeartbeatAt.After(h[0].ClaimedAt.Add(ttl)) {
		e.Fatalf("history = %s; want one attempt renewed past its first TTL", fmtHistory(h))
	}
}

// testLostLeaseCancelsHandler: when a heartbeat finds the lease gone from
// the database, the handler's context is cancelled with ErrLeaseLost and
// the client writes nothing for it. The cancel must come from the
// heartbeat, not from the watchdog, which cancels with the same cause and
// event once the lease's safe window has passed: with a TTL of a minute
// the watchdog cannot act for 50 s after the last renewal, while a
// heartbeat every 100 ms finds the lease gone well inside lostLeaseBound.
func testLostLeaseCancelsHandler(e *clientEnv) {
	const (
		ttl      = time.Minute
		interval = 100 * time.Millisecond
		// lostLeaseBound is a hundred heartbeat intervals (for a slow CI
		// machine), and far below the safe window (TTL less its default
		// TTL/6 margin).
		lostLeaseBound = 10 * time.Second
	)
	started := make(chan struct{})
	causeC := make(chan error, 1)
	// The handler winds down only once the test returns: its worker slot,
	// A's only one, stays taken, so that A does not claim the job again
	// between its release below and the other worker's claim.
	windDown := make(chan struct{})
	defer close(windDown)
	a := e.newClient(e.d, e.workers(func(ctx context.Context, job *leasehold.Job[testArgs]) error {
		close(started)
		<-ctx.Done()
		causeC <- context.Cause(ctx)
		<-windDown
		return ctx.Err()
	}), func(c *leasehold.Config) { oneWorker(c); c.LeaseTTL, c.HeartbeatInterval = ttl, interval })
	res, err := a.Insert(e.ctx, testArgs{N: 1}, nil)
	if err != nil {
		e.Fatalf("Insert: %v", err)
	}
	e.waitGate(started, "the handler to start")
	// Another party ends A's lease (a fenced release with A's token), and a
	// second worker claims the job: A's lease is gone from the database.
	release := token(res.Job.ID, a.Owner(), 1, statemachine.Ending{Outcome: leasehold.OutcomeReleased})
	ids, err := e.d.Finish(e.ctx, nil, []*driver.FinishParams{release})
	if err != nil || len(ids) != 1 {
		e.Fatalf("release A's lease: %v %v", ids, err)
	}
	if got, err := e.d.ClaimByID(e.ctx, &driver.ClaimByIDParams{ID: res.Job.ID, Owner: "other", TTL: ttl}); err != nil || got == nil {
		e.Fatalf("ClaimByID = %v, %v; want the released job", got, err)
	}
	select {
	case cause := <-causeC:
		if !errors.Is(cause, leasehold.ErrLeaseLost) {
			e.Fatalf("handler cancelled with %v, want ErrLeaseLost", cause)
		}
	case <-time.After(lostLeaseBound):
		e.Fatalf("handler not cancelled %v after its lease was lost, with a heartbeat every %v", lostLeaseBound, interval)
	}
	e.waitFor("A to count the lost lease", lostLeaseBound, func() bool { return a.Stats().LeaseLost == 1 })
	row, _ := e.d.GetJob(e.ctx, res.Job.ID)
	if row.LeaseOwner != "other" || row.Attempt != 2 || row.State != leasehold.StateProcessing {
		e.Fatalf("job after A lost it: %+v; want owned by other, attempt 2", row)
	}
}

// testWatchdogCancelsBeforeExpiry: a worker whose heartbeats fail cancels
// its handler before the lease expires by the database clock (DESIGN
// invariant 9), then hands the job back with outcome lease_lost.
func testWatchdogCancelsBeforeExpiry(e *clientEnv) {
	fd := &faultDriver{Driver: e.d}
	started := make(chan struct{})
	type cancelInfo struct {
		cause error
		dbNow time.Time
	}
	infoC := make(chan cancelInfo, 1)
	a := e.newClient(fd, e.workers(func(ctx context.Context, job *leasehold.Job[testArgs]) error {
		if job.Attempt > 1 {
			return nil // the job came back after lease_lost
		}
		close(started)
		<-ctx.Done()
		now, _ := e.d.Now(context.Background())
		infoC <- cancelInfo{context.Cause(ctx), now}
		return ctx.Err()
	}), func(c *leasehold.Config) {
		c.LeaseTTL, c.HeartbeatInterval, c.LeaseSafetyMargin = 1500*time.Millisecond, 300*time.Millisecond, 500*time.Millisecond
		c.DisableWatcher = true
	})
	res, err := a.Insert(e.ctx, testArgs{N: 1}, nil)
	if err != nil {
		e.Fatalf("Insert: %v", err)
	}
	e.waitGate(started, "the handler to start")
	fd.cutOff.Store(true)
	var info cancelInfo
	select {
	case info = <-infoC:
	case <-time.After(30 * time.Second):
		e.Fatalf("handler not cancelled while its heartbeats failed")
	}
	row, _ := e.d.GetJob(e.ctx, res.Job.ID)
	if !errors.Is(info.cause, leasehold.ErrLeaseLost) {
		e.Fatalf("cause = %v, want ErrLeaseLost", info.cause)
	}
	if row.State == leasehold.StateProcessing && !info.dbNow.Before(row.LeaseUntil) {
		e.Fatalf("handler cancelled at %v, not before the lease expired at %v", info.dbNow, row.LeaseUntil)
	}
	e.waitFor("the lease_lost outcome", 30*time.Second, func() bool {
		h := e.history(res.Job.ID)
		return h[0].Outcome != leasehold.OutcomeRunning
	})
	if h := e.history(res.Job.ID); h[0].Outcome != leasehold.OutcomeLeaseLost {
		e.Fatalf("history = %s; want the first attempt ended lease_lost", fmtHistory(h))
	}
}
