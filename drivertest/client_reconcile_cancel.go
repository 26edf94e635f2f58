package drivertest

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// testCancelledDeadPaymentReconciled: an operator cancels three payments
// whose worker died mid-charge (their leases run on, the cancel request
// waits for them). Their reconciler decides before the cancel applies:
// the one the provider charged is completed, not cancelled; the two it
// never charged are cancelled where a retry would have run them again,
// one resolved in the reconciler's own transaction (ResolveReconcileTx),
// one in a transaction of its own. No handler runs any of them; each
// cancellation is reported as a resolution (EventFinished cancelled,
// ResolvedBy set, counted in Stats.Cancelled), and the history says the
// job was cancelled instead. With a driver that ignores
// CancelledResolution (one written before it existed), the history keeps
// the reconciler's words and the events are reported all the same.
func testCancelledDeadPaymentReconciled(e *clientEnv) {
	cancelledDeadPayments(e, e.d, cancelledInstead)
	cancelledDeadPayments(e, plainResolutions{e.d}, "")
}

// cancelledInstead is the end of the resolution the client records on a
// job cancelled in place of a retry.
const cancelledInstead = "; cancelled instead, as an operator had asked"

// plainResolutions is a driver that records Resolution where the driver
// it wraps would record CancelledResolution.
type plainResolutions struct{ driver.Driver }

// Resolve resolves p without its CancelledResolution.
func (d plainResolutions) Resolve(ctx context.Context, tx any, p *driver.ResolveParams) (leasehold.JobState, error) {
	q := *p
	q.CancelledResolution = ""
	return d.Driver.Resolve(ctx, tx, &q)
}

// cancelledDeadPayments runs testCancelledDeadPaymentReconciled's
// payments with a client on d, whose resolutions of the cancelled ones
// end with suffix.
func cancelledDeadPayments(e *clientEnv, d driver.Driver, suffix string) {
	charged := e.deadLease("pay", "charge-sent", "charged")
	inTx, alone := e.deadLease("pay", "charge-sent"), e.deadLease("pay", "charge-sent")
	for _, j := range []*leasehold.JobRow{charged, inTx, alone} {
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
		if job.Args.JobID != inTx.ID {
			return chargeReconciler(ctx, job)
		}
		tx, commit, rollback := kind.Begin(e.T, e.d)
		r := leasehold.Resolution{Action: leasehold.ResolveRetry, Note: "no charge at the provider"}
		if err := leasehold.ClientFromContext(ctx).ResolveReconcileTx(ctx, tx, job.JobRow, r); err != nil {
			return errors.Join(rollback(), ignoreNotReconciling(err))
		}
		return commit()
	}))
	if err != nil {
		e.Fatalf("AddWorker: %v", err)
	}
	cRef := e.newClient(d, ws, reconcileQueues)
	events, unsubscribe := cRef.Subscribe(leasehold.EventFinished)
	defer unsubscribe()
	close(subscribed)
	e.waitState(charged.ID, leasehold.StateCompleted, 30*time.Second)
	e.waitState(inTx.ID, leasehold.StateCancelled, 30*time.Second)
	e.waitState(alone.ID, leasehold.StateCancelled, 30*time.Second)
	// Stats count an event before it is sent to subscribers: wait for the
	// three reconcile jobs' own completions, reported after their
	// resolutions, and the resolution that completed a job.
	e.waitFor("the resolutions' and reconcile jobs' events", 10*time.Second, func() bool {
		st := cRef.Stats()
		return st.Cancelled >= 2 && st.Completed >= 3+1
	})
	if n := runs.Load(); n != 0 {
		e.Errorf("%d handler runs of the cancelled payments, want none", n)
	}
	e.checkResolution(charged.ID, 1, "completed by reconcile job", "provider charged")
	for _, j := range []*leasehold.JobRow{inTx, alone} {
		e.checkResolution(j.ID, 1, "retried by reconcile job", "no charge at the provider"+suffix)
	}
	e.checkResolvedEvents(drain(events), map[int64]leasehold.Outcome{charged.ID: leasehold.OutcomeCompleted,
		inTx.ID: leasehold.OutcomeCancelled, alone.ID: leasehold.OutcomeCancelled})
	if err := cRef.Stop(e.ctx); err != nil { // before another client takes the next payments
		e.Fatalf("Stop: %v", err)
	}
}
