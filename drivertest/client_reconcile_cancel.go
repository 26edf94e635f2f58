package drivertest

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/leasehold/leasehold"
)

// testCancelledDeadPaymentReconciled: an operator cancels two payments
// whose worker died mid-charge (their leases run on, the cancel request
// waits for them). Their reconciler decides before the cancel applies:
// the one the provider charged is completed, not cancelled; the one it
// never charged is cancelled where a retry would have run it again. No
// handler runs either, and the cancellation is reported as a resolution
// (EventFinished cancelled, ResolvedBy set, counted in Stats.Cancelled),
// though it was made in the reconciler's own transaction
// (ResolveReconcileTx), and the history says the job was cancelled.
func testCancelledDeadPaymentReconciled(e *clientEnv) {
	charged, unsent := e.deadLease("pay", "charge-sent", "charged"), e.deadLease("pay", "charge-sent")
	for _, j := range []*leasehold.JobRow{charged, unsent} {
		if _, err := e.d.CancelJob(e.ctx, j.ID); err != nil {
			e.Fatalf("CancelJob(processing): %v", err)
		}
	}
	var runs atomic.Int32
	subscribed := make(chan struct{})
	ws := e.workers(func(context.Context, *leasehold.Job[testArgs]) error { runs.Add(1); return nil })
	kind := e.h.TxKinds[0]
	err := leasehold.AddWorker(ws, leasehold.WorkFunc[leasehold.ReconcileArgs](func(ctx context.Context, job *leasehold.Job[leasehold.ReconcileArgs]) error {
		<-subscribed // no resolution before the events are watched
		if job.Args.JobID != unsent.ID {
			return chargeReconciler(ctx, job)
		}
		tx, commit, rollback := kind.Begin(e.T, e.d)
		r := leasehold.Resolution{Action: leasehold.ResolveRetry, Note: "no charge at the provider"}
		if err := leasehold.ClientFromContext(ctx).ResolveReconcileTx(ctx, tx, job.JobRow, r); err != nil {
			return errors.Join(err, rollback())
		}
		return commit()
	}))
	if err != nil {
		e.Fatalf("AddWorker: %v", err)
	}
	cRef := e.newClient(e.d, ws, reconcileQueues)
	events, unsubscribe := cRef.Subscribe(leasehold.EventFinished)
	defer unsubscribe()
	close(subscribed)
	e.waitState(charged.ID, leasehold.StateCompleted, 30*time.Second)
	e.waitState(unsent.ID, leasehold.StateCancelled, 30*time.Second)
	// Stats count an event before it is sent to subscribers: wait for the
	// two reconcile jobs' own completions, reported after their
	// resolutions, and the resolution that completed a job.
	e.waitFor("the resolutions' and reconcile jobs' events", 10*time.Second, func() bool {
		st := cRef.Stats()
		return st.Cancelled >= 1 && st.Completed >= 2+1
	})
	if n := runs.Load(); n != 0 {
		e.Errorf("%d handler runs of the cancelled payments, want none", n)
	}
	e.checkResolution(charged.ID, 1, "completed by reconcile job", "provider charged")
	e.checkResolution(unsent.ID, 1, "retried by reconcile job", "no charge at the provider",
		"; cancelled instead, as an operator had asked")
	e.checkResolvedEvents(drain(events), map[int64]leasehold.Outcome{
		charged.ID: leasehold.OutcomeCompleted, unsent.ID: leasehold.OutcomeCancelled})
}
