package drivertest

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/leasehold/leasehold"
)

// reconciler returns workers of "test" jobs that do nothing and of
// reconcile jobs that run resolve with the client that runs them.
func (e *clientEnv) reconciler(resolve func(ctx context.Context, c *leasehold.Client, job *leasehold.Job[leasehold.ReconcileArgs]) error) *leasehold.Workers {
	e.Helper()
	ws := e.workers(func(context.Context, *leasehold.Job[testArgs]) error { return nil })
	err := leasehold.AddWorker(ws, leasehold.WorkFunc[leasehold.ReconcileArgs](func(ctx context.Context, job *leasehold.Job[leasehold.ReconcileArgs]) error {
		return resolve(ctx, leasehold.ClientFromContext(ctx), job)
	}))
	if err != nil {
		e.Fatalf("AddWorker: %v", err)
	}
	return ws
}

// waitReconcileJobs waits until n reconcile jobs have completed.
func (e *clientEnv) waitReconcileJobs(n int) {
	e.Helper()
	e.waitFor("the reconcile jobs to complete", 30*time.Second, func() bool {
		jobs, err := e.d.ListJobs(e.ctx, &leasehold.ListParams{Kind: leasehold.ReconcileKind,
			States: []leasehold.JobState{leasehold.StateCompleted}})
		if err != nil {
			e.Fatalf("ListJobs: %v", err)
		}
		return len(jobs) == n
	})
}

// waitErr returns the first error sent on errs.
func (e *clientEnv) waitErr(errs <-chan error) error {
	e.Helper()
	select {
	case err := <-errs:
		return err
	case <-time.After(30 * time.Second):
		e.Fatal("the reconciler did not resolve")
		return nil
	}
}

// testResolveReadsTheLeasesArgs: the job a reconcile job resolves is the
// one its lease's own row names. A handler that passes a copy of its row
// whose Args name another reconciling job resolves its own job; the other
// stays reconciling.
func testResolveReadsTheLeasesArgs(e *clientEnv) {
	a, b := e.deadLease("pay"), e.deadLease("pay")
	errs := make(chan error, 1)
	e.newClient(e.d, e.reconciler(func(ctx context.Context, c *leasehold.Client, job *leasehold.Job[leasehold.ReconcileArgs]) error {
		if job.Args.JobID != a.ID {
			return nil // b's reconciler decides nothing
		}
		other := *job.JobRow
		args, err := json.Marshal(leasehold.ReconcileArgs{JobID: b.ID, Attempt: b.Attempt, JobKind: b.Kind, JobQueue: b.Queue})
		if err != nil {
			return err
		}
		other.Args = args
		errs <- c.ResolveReconcile(ctx, &other, leasehold.Resolution{Action: leasehold.ResolveComplete})
		return nil
	}), reconcileQueues)
	if err := e.waitErr(errs); err != nil {
		e.Errorf("ResolveReconcile with a copy of the row naming another job = %v, want its own job resolved", err)
	}
	e.waitReconcileJobs(2)
	e.waitState(a.ID, leasehold.StateCompleted, time.Second)
	e.waitState(b.ID, leasehold.StateReconciling, time.Second)
}

// testResolveIgnoresDelayOfComplete: Resolution.Delay is ignored by the
// actions that do not run the job again, even when negative; a retry with
// a negative delay is refused with ErrInvalidArgs and writes nothing.
func testResolveIgnoresDelayOfComplete(e *clientEnv) {
	a := e.deadLease("pay")
	errs := make(chan error, 2)
	e.newClient(e.d, e.reconciler(func(ctx context.Context, c *leasehold.Client, job *leasehold.Job[leasehold.ReconcileArgs]) error {
		errs <- c.ResolveReconcile(ctx, job.JobRow, leasehold.Resolution{Action: leasehold.ResolveRetry, Delay: -time.Minute})
		errs <- c.ResolveReconcile(ctx, job.JobRow, leasehold.Resolution{Action: leasehold.ResolveComplete, Delay: -time.Minute})
		return nil
	}), reconcileQueues)
	if err := e.waitErr(errs); !errors.Is(err, leasehold.ErrInvalidArgs) {
		e.Errorf("ResolveRetry with a negative Delay = %v, want ErrInvalidArgs", err)
	}
	if err := e.waitErr(errs); err != nil {
		e.Errorf("ResolveComplete with a negative Delay = %v, want it ignored", err)
	}
	e.waitReconcileJobs(1)
	e.waitState(a.ID, leasehold.StateCompleted, time.Second)
}

// testResolveAfterRolledBackTxReportedOnce: a reconciler that resolves
// in a transaction that rolls back, then resolves the same way on its own
// (the history then records the very text the rolled-back resolution
// would have), reports one EventFinished for the job, counted once in
// Stats.
func testResolveAfterRolledBackTxReportedOnce(e *clientEnv) {
	a := e.deadLease("pay")
	kind := e.h.TxKinds[0]
	r := leasehold.Resolution{Action: leasehold.ResolveComplete, Note: "provider charged ch_1"}
	subscribed := make(chan struct{})
	c := e.newClient(e.d, e.reconciler(func(ctx context.Context, c *leasehold.Client, job *leasehold.Job[leasehold.ReconcileArgs]) error {
		<-subscribed
		tx, _, rollback := kind.Begin(e.T, e.d)
		if err := c.ResolveReconcileTx(ctx, tx, job.JobRow, r); err != nil {
			return errors.Join(err, rollback())
		}
		if err := rollback(); err != nil {
			return err
		}
		return c.ResolveReconcile(ctx, job.JobRow, r)
	}), reconcileQueues)
	events, unsubscribe := c.Subscribe(leasehold.EventFinished)
	defer unsubscribe()
	close(subscribed)
	e.waitReconcileJobs(1)
	e.waitState(a.ID, leasehold.StateCompleted, time.Second)
	// The completer reports the reconcile job's own outcome just after
	// writing it: Completed counts it and the resolution.
	e.waitFor("the reconcile job's own event", 10*time.Second, func() bool { return c.Stats().Completed >= 2 })
	e.checkResolvedEvents(drain(events), map[int64]leasehold.Outcome{a.ID: leasehold.OutcomeCompleted})
	if st := c.Stats(); st.Completed != 2 {
		e.Errorf("Stats().Completed = %d, want 2 (the reconcile job and the resolution)", st.Completed)
	}
}
