package drivertest

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/leasehold/leasehold"
)

// testReconcilerGivingUpIsStuck: a reconcile job whose handler keeps
// failing until its retry budget is spent does not end failed, which
// would leave its reconciling job with nothing that ever decides it: it
// becomes stuck, its history recording the failure, and the job it
// reconciles stays reconciling. An operator's retry of the reconcile job
// runs the reconciler again, which then settles the job.
func testReconcilerGivingUpIsStuck(e *clientEnv) {
	payment := e.deadLease("pay")
	var down atomic.Bool
	down.Store(true)
	var recID atomic.Int64
	var cRef *leasehold.Client
	ws := e.workers(func(context.Context, *leasehold.Job[testArgs]) error { return nil })
	err := leasehold.AddWorker(ws, leasehold.WorkFunc[leasehold.ReconcileArgs](func(ctx context.Context, job *leasehold.Job[leasehold.ReconcileArgs]) error {
		recID.Store(job.ID)
		if down.Load() {
			return errors.New("provider unreachable")
		}
		return cRef.ResolveReconcile(ctx, job.JobRow, leasehold.Resolution{Action: leasehold.ResolveComplete, Note: "provider charged"})
	}))
	if err != nil {
		e.Fatalf("AddWorker: %v", err)
	}
	cRef = e.newClient(e.d, ws, func(c *leasehold.Config) {
		reconcileQueues(c)
		c.Queues["pay"].Reconcile.MaxAttempts = 2
		c.RetryPolicy = &leasehold.ExponentialBackoff{Base: 10 * time.Millisecond, Max: 10 * time.Millisecond}
	})
	e.waitFor("the reconcile job to run", 30*time.Second, func() bool { return recID.Load() != 0 })
	rec := e.waitState(recID.Load(), leasehold.StateStuck, 30*time.Second)
	e.waitFor("Stats to count the reconcile job flagged", 10*time.Second, func() bool { return cRef.Stats().Flagged == 1 })
	if st := cRef.Stats(); st.Failed != 0 {
		e.Fatalf("Stats after a reconcile job was flagged stuck: Failed %d, want 0 (Flagged %d)", st.Failed, st.Flagged)
	}
	if h := e.history(rec.ID); rec.Attempt != 2 || len(h) != 2 || h[1].Outcome != leasehold.OutcomeFailed {
		e.Fatalf("reconcile job after its budget: attempt %d, history %s; want 2 attempts, the last failed", rec.Attempt, fmtHistory(h))
	}
	if row, err := e.d.GetJob(e.ctx, payment.ID); err != nil || row.State != leasehold.StateReconciling {
		e.Fatalf("payment while its reconcile job is stuck: %+v, %v; want reconciling", row, err)
	}
	down.Store(false)
	if _, err := cRef.RetryJob(e.ctx, rec.ID); err != nil {
		e.Fatalf("RetryJob(stuck reconcile job): %v", err)
	}
	e.waitState(payment.ID, leasehold.StateCompleted, 30*time.Second)
	e.waitState(rec.ID, leasehold.StateCompleted, 30*time.Second)
	e.checkResolution(payment.ID, 1, "completed by reconcile job", "provider charged")
}
