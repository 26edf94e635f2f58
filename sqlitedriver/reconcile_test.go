package sqlitedriver

import (
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/statemachine"
)

// TestResolveStampsAfterTheWriteLock: a resolution in a caller's
// transaction begun DEFERRED waits for the write lock when another
// connection holds it. The times it writes (run_at of a retry, finished_at
// of a completion) are those of once the lock is won, not of a clock
// read before the wait.
func TestResolveStampsAfterTheWriteLock(t *testing.T) {
	const wait = 300 * time.Millisecond
	for _, action := range []statemachine.Resolution{statemachine.ResolveRetry, statemachine.ResolveComplete} {
		path, caller, d := callerDriver(t)
		ctx := testCtx(t)
		p := reconcilingJob(t, d, action)

		before, err := d.Now(ctx)
		if err != nil {
			t.Fatal(err)
		}
		release := holdWriteLock(t, openDB(t, path), wait)
		tx, err := caller.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := d.Resolve(ctx, tx, p); err != nil {
			t.Fatalf("Resolve: %v", err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		if err := <-release; err != nil {
			t.Fatal(err)
		}
		j := mustGet(t, d, p.JobID)
		stamp := j.RunAt
		if action == statemachine.ResolveComplete {
			stamp = j.FinishedAt
		}
		if got := stamp.Sub(before); got < wait-50*time.Millisecond {
			t.Errorf("resolution %d (job %s) stamped %v after the clock read before a %v wait for the write lock; want a time after the wait",
				action, j.State, got, wait)
		}
	}
}

// reconcilingJob makes a job of queue "q" reconciling (its lease expired
// in a queue that reconciles), claims its reconcile job as "rec-w", and
// returns the resolution action of it by that lease.
func reconcilingJob(t *testing.T, d *Driver, action statemachine.Resolution) *driver.ResolveParams {
	t.Helper()
	ctx := testCtx(t)
	insert(t, d, job(`{}`))
	held := claim(t, d, "dead", 1, time.Millisecond, false)[0]
	time.Sleep(5 * time.Millisecond)
	decide := statemachine.PolicyRescuer(statemachine.Policy{Reconcile: map[string]statemachine.ReconcileTarget{
		"q": {Kind: leasehold.ReconcileKind, Queue: "rec", MaxAttempts: 3}}})
	res, err := d.RescueExpired(ctx, &driver.RescueParams{Decide: decide})
	if err != nil || len(res) != 1 || res[0].ReconcileJobID == 0 {
		t.Fatalf("RescueExpired = %+v, %v; want job %d reconciling", res, err, held.ID)
	}
	rec, err := d.ClaimByID(ctx, &driver.ClaimByIDParams{ID: res[0].ReconcileJobID, Owner: "rec-w", TTL: time.Minute})
	if err != nil || rec == nil {
		t.Fatalf("ClaimByID(reconcile job) = %v, %v", rec, err)
	}
	tr, err := statemachine.Resolve(action, 0, "")
	if err != nil {
		t.Fatal(err)
	}
	return &driver.ResolveParams{ID: rec.ID, Owner: "rec-w", LeaseAttempt: rec.Attempt,
		JobID: held.ID, Attempt: held.Attempt, Transition: tr, Resolution: "decided"}
}
