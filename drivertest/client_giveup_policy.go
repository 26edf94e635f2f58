package drivertest

import (
	"context"
	"time"

	"github.com/leasehold/leasehold"
)

// cutOffHandler is a handler that runs until its context is cancelled,
// signalling started when it begins and cut when it was cancelled, and
// returns what a handler cut off mid-call returns.
func cutOffHandler(started, cut chan<- struct{}) func(ctx context.Context, _ *leasehold.Job[testArgs]) error {
	return func(ctx context.Context, _ *leasehold.Job[testArgs]) error {
		started <- struct{}{}
		<-ctx.Done()
		if cut != nil {
			cut <- struct{}{}
		}
		return ctx.Err()
	}
}

// checkLeftToWatcher fails unless job id is still processing at its first
// attempt with nothing written for it: its lease left to run out.
func (e *clientEnv) checkLeftToWatcher(id int64, how string) {
	e.Helper()
	row, err := e.d.GetJob(e.ctx, id)
	if err != nil {
		e.Fatalf("GetJob: %v", err)
	}
	if h := e.history(id); row.State != leasehold.StateProcessing || row.Attempt != 1 || len(h) != 1 || h[0].Outcome != "" {
		e.Fatalf("job in a Reconcile queue after %s: state %s, attempt %d, history %s; "+
			"want processing at attempt 1 with nothing written (its lease left to the watcher)",
			how, row.State, row.Attempt, fmtHistory(h))
	}
}

// waitReconciled waits until the watcher has moved job id, whose lease was
// left to run out, out of processing, and fails unless it is reconciling
// with one attempt ended lease_expired: the handler never ran again.
func (e *clientEnv) waitReconciled(id int64) {
	e.Helper()
	row := e.waitOutOfProcessing(id, "the watcher to take the expired lease")
	if h := e.history(id); row.State != leasehold.StateReconciling || row.Attempt != 1 || len(h) != 1 ||
		h[0].Outcome != leasehold.OutcomeLeaseExpired {
		e.Fatalf("job in a Reconcile queue once its lease ran out: state %s, attempt %d, history %s; "+
			"want reconciling, one attempt ended lease_expired", row.State, row.Attempt, fmtHistory(h))
	}
}

// testStopLeavesReconcileQueueLeaseToWatcher: a handler that Stop cancels
// after ShutdownTimeout, in a queue that reconciles expired leases, may
// have been cut off mid-effect (a payment request aborted), as in a
// FlagStuck queue: its lease is not released, so its job does not run
// again blindly; the watcher reconciles it once the lease has run out.
func testStopLeavesReconcileQueueLeaseToWatcher(e *clientEnv) {
	started := make(chan struct{}, 1)
	c := e.newClient(e.d, e.workers(cutOffHandler(started, nil)), func(c *leasehold.Config) {
		reconcileQueues(c)
		c.LeaseTTL, c.ShutdownTimeout = 1500*time.Millisecond, 100*time.Millisecond
	})
	id := e.insertOpts(c, &leasehold.InsertOpts{Queue: "pay"})
	e.waitGate(started, "the handler to start")
	if err := c.Stop(e.ctx); err != nil {
		e.Fatalf("Stop: %v", err)
	}
	e.checkLeftToWatcher(id, "Stop cut its handler off")
	ran := make(chan struct{}, 4)
	e.newClient(e.d, e.workers(func(context.Context, *leasehold.Job[testArgs]) error {
		ran <- struct{}{}
		return nil
	}), func(c *leasehold.Config) {
		reconcileQueues(c)
		c.WatcherInterval = 50 * time.Millisecond
	})
	e.waitReconciled(id)
	if n := len(ran); n != 0 {
		e.Fatalf("the second client ran %d handlers, want none (the job is the reconciler's)", n)
	}
}

// testGivenUpLeaseInReconcileQueueLeftToWatcher: the watchdog's give-up
// of a lease in a queue that reconciles expired leases (its heartbeats
// fail) writes nothing, as in a FlagStuck queue: the handler may have been
// cut off mid-effect, so the job is neither released nor ended lease_lost
// and run again; it stays processing until the watcher reconciles it.
func testGivenUpLeaseInReconcileQueueLeftToWatcher(e *clientEnv) {
	fd := &faultDriver{Driver: e.d}
	started, cut := make(chan struct{}, 4), make(chan struct{}, 4)
	c := e.newClient(fd, e.workers(cutOffHandler(started, cut)), func(c *leasehold.Config) {
		reconcileQueues(c)
		c.LeaseTTL, c.HeartbeatInterval, c.LeaseSafetyMargin = 1500*time.Millisecond, 300*time.Millisecond, 500*time.Millisecond
		c.WatcherInterval = 50 * time.Millisecond
	})
	id := e.insertOpts(c, &leasehold.InsertOpts{Queue: "pay"})
	e.waitGate(started, "the handler to start")
	fd.cutOff.Store(true)
	e.waitGate(cut, "the watchdog to cut the handler off")
	e.waitReconciled(id)
	if n := len(started); n != 0 {
		e.Fatalf("the handler ran %d more times after the watchdog gave its lease up, want none", n)
	}
}

// testGivenUpReconcileJobNeverFailed: a reconcile job whose lease the
// watchdog gives up with its retry budget spent is not failed, which would
// leave the job it reconciles with nothing that ever decides it: it is
// flagged stuck, its one attempt recorded failed.
func testGivenUpReconcileJobNeverFailed(e *clientEnv) {
	fd := &faultDriver{Driver: e.d}
	started := make(chan struct{}, 4)
	ws := leasehold.NewWorkers()
	err := leasehold.AddWorker(ws, leasehold.WorkFunc[leasehold.ReconcileArgs](func(ctx context.Context, _ *leasehold.Job[leasehold.ReconcileArgs]) error {
		started <- struct{}{}
		<-ctx.Done()
		return ctx.Err()
	}))
	if err != nil {
		e.Fatalf("AddWorker: %v", err)
	}
	c := e.newClient(fd, ws, func(c *leasehold.Config) {
		c.LeaseTTL, c.HeartbeatInterval, c.LeaseSafetyMargin = 1500*time.Millisecond, 300*time.Millisecond, 500*time.Millisecond
		c.WatcherInterval = time.Hour // the give-up alone decides the job
	})
	res, err := c.Insert(e.ctx, leasehold.ReconcileArgs{JobID: 999, Attempt: 1, JobQueue: "pay", IdempotencyKey: "k"},
		&leasehold.InsertOpts{MaxAttempts: 1})
	if err != nil {
		e.Fatalf("Insert: %v", err)
	}
	id := res.Job.ID
	e.waitGate(started, "the reconcile job's handler to start")
	fd.cutOff.Store(true)
	row := e.waitOutOfProcessing(id, "the watchdog to give the lease up")
	if h := e.history(id); row.State != leasehold.StateStuck || row.Attempt != 1 || len(h) != 1 ||
		h[0].Outcome != leasehold.OutcomeFailed {
		e.Fatalf("reconcile job whose lease the watchdog gave up, its budget spent: state %s, attempt %d, history %s; "+
			"want stuck (never failed), one attempt ended failed", row.State, row.Attempt, fmtHistory(h))
	}
}

// waitOutOfProcessing waits up to 30 s, for what, until job id is no
// longer processing, and returns its row.
func (e *clientEnv) waitOutOfProcessing(id int64, what string) *leasehold.JobRow {
	e.Helper()
	var row *leasehold.JobRow
	e.waitFor(what, 30*time.Second, func() bool {
		var err error
		if row, err = e.d.GetJob(e.ctx, id); err != nil {
			e.Fatalf("GetJob: %v", err)
		}
		return row.State != leasehold.StateProcessing
	})
	return row
}
