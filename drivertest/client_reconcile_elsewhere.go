package drivertest

import (
	"context"
	"errors"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// payReconcileKind is the reconcile kind a payments policy names in the
// tests of a process that works the reconcile queue only.
const payReconcileKind = "pay.reconcile"

// payReconcileArgs are ReconcileArgs under payReconcileKind, the args
// type of the same JSON shape that ReconcilePolicy.Kind allows.
type payReconcileArgs struct{ leasehold.ReconcileArgs }

// Kind implements leasehold.Args.
func (payReconcileArgs) Kind() string { return payReconcileKind }

// spawnPayReconcile makes a payment whose worker died and has the
// process that works "payments" (its policy: reconcile into "recon"
// with payReconcileKind jobs of one attempt) move it to reconciling. It
// returns the payment and its reconcile job.
func (e *clientEnv) spawnPayReconcile() (payment, rec *leasehold.JobRow) {
	e.Helper()
	payment = e.deadLease("payments")
	(&tc{T: e.T, ctx: e.ctx, h: e.h, d: e.d}).waitExpired(payment)
	payer, err := leasehold.NewClient(leasehold.Config{Driver: e.d, Logger: quietLogger(),
		Queues: map[string]leasehold.QueueConfig{"payments": {Reconcile: &leasehold.ReconcilePolicy{
			Queue: "recon", Kind: payReconcileKind, MaxAttempts: 1}}}})
	if err != nil {
		e.Fatalf("NewClient(payments): %v", err)
	}
	moved, err := payer.RescueExpired(e.ctx)
	if err != nil || len(moved) != 1 || moved[0].ReconcileJobID == 0 {
		e.Fatalf("RescueExpired by the payments process = %+v, %v; want the payment reconciling", moved, err)
	}
	if rec, err = e.d.GetJob(e.ctx, moved[0].ReconcileJobID); err != nil {
		e.Fatalf("GetJob(reconcile job): %v", err)
	}
	return payment, rec
}

// insertOrdinary inserts a job of kind "other" in queue "recon", of one
// attempt, with an ordinary unique key.
func (e *clientEnv) insertOrdinary(key string) *leasehold.JobRow {
	e.Helper()
	res, err := e.d.Insert(e.ctx, nil, []*driver.InsertParams{{Kind: "other", Queue: "recon", Args: []byte(`{"n":1}`),
		MaxAttempts: 1, UniqueKey: key}})
	if err != nil {
		e.Fatalf("Insert: %v", err)
	}
	return res[0].Job
}

// waitSettled waits until job id is neither processing nor pending and
// returns it.
func (e *clientEnv) waitSettled(id int64) *leasehold.JobRow {
	e.Helper()
	var row *leasehold.JobRow
	e.waitFor("job to settle (neither processing nor pending)", 30*time.Second, func() bool {
		var err error
		if row, err = e.d.GetJob(e.ctx, id); err != nil {
			e.Fatalf("GetJob: %v", err)
		}
		return row.State != leasehold.StateProcessing && row.State != leasehold.StatePending
	})
	return row
}

// checkReconcilerStuck checks that the reconcile job rec ended stuck and
// its payment still waits reconciling, and that the ordinary job ended
// failed.
func (e *clientEnv) checkReconcilerStuck(how string, payment, rec, ordinary *leasehold.JobRow) {
	e.Helper()
	if got := e.waitSettled(rec.ID); got.State != leasehold.StateStuck {
		e.Errorf("reconcile job of kind %s, %s in a process without the payments policy: %s, want stuck", payReconcileKind, how, got.State)
	}
	if got := e.waitSettled(ordinary.ID); got.State != leasehold.StateFailed {
		e.Errorf("ordinary job (kind other, key %q), %s: %s, want failed", ordinary.UniqueKey, how, got.State)
	}
	if got, err := e.d.GetJob(e.ctx, payment.ID); err != nil || got.State != leasehold.StateReconciling {
		e.Errorf("payment: %+v, %v; want it still reconciling", got, err)
	}
}

// testReconcileJobStuckByWatcherElsewhere: a process that works only the
// reconcile queue (not "payments", so without its policy and the custom
// kind it names) rescues the expired lease of a reconcile job whose
// budget is spent: stuck, as the process with the policy would leave it,
// not failed, which would leave the payment reconciling for ever. An
// ordinary job of the queue whose lease expired on its last attempt
// fails.
func testReconcileJobStuckByWatcherElsewhere(e *clientEnv) {
	payment, rec := e.spawnPayReconcile()
	ordinary := e.insertOrdinary("order-12")
	w := &tc{T: e.T, ctx: e.ctx, h: e.h, d: e.d}
	leases := []*leasehold.JobRow{
		w.claimID(e.d, rec.ID, "dead-reconciler", shortTTL, false),
		w.claimID(e.d, ordinary.ID, "dead-reconciler", shortTTL, false),
	}
	w.waitExpired(leases...)
	// Its worker is for another kind: the watcher, not a takeover, moves
	// both expired leases.
	e.newClient(e.d, e.workers(func(context.Context, *leasehold.Job[testArgs]) error { return nil }), func(c *leasehold.Config) {
		c.Queues = map[string]leasehold.QueueConfig{"recon": {}}
	})
	e.checkReconcilerStuck("its lease expired on its last attempt", payment, rec, ordinary)
}

// testReconcileJobStuckByHandlerElsewhere: a process that works only the
// reconcile queue, with a worker for the custom reconcile kind, flags a
// reconcile job whose handler returns a permanent error stuck, not
// failed; an ordinary job whose handler does so fails.
func testReconcileJobStuckByHandlerElsewhere(e *clientEnv) {
	payment, rec := e.spawnPayReconcile()
	ordinary := e.insertOrdinary("order-7")
	ws := leasehold.NewWorkers()
	err := errors.Join(
		leasehold.AddWorker(ws, leasehold.WorkFunc[payReconcileArgs](func(context.Context, *leasehold.Job[payReconcileArgs]) error {
			return leasehold.Permanent(errors.New("provider refuses to say"))
		})),
		leasehold.AddWorker(ws, leasehold.WorkFunc[otherArgs](func(context.Context, *leasehold.Job[otherArgs]) error {
			return leasehold.Permanent(errors.New("card declined"))
		})))
	if err != nil {
		e.Fatalf("AddWorker: %v", err)
	}
	e.newClient(e.d, ws, func(c *leasehold.Config) {
		c.Queues = map[string]leasehold.QueueConfig{"recon": {}}
	})
	e.checkReconcilerStuck("its handler returning a permanent error", payment, rec, ordinary)
}
