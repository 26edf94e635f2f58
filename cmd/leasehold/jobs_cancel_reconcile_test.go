package main

import (
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
)

// TestJobsCancelReconcileJob: cancelling the reconcile job of a job whose
// lease expired in a queue that reconciles says that the job it was
// deciding is now stuck, and how to decide it; `jobs stuck` lists that
// job with a reason naming the cancelled reconcile job, and the watcher
// leaves it there.
func TestJobsCancelReconcileJob(t *testing.T) {
	db := "sqlite:" + t.TempDir() + "/lh.db"
	ok(t, db, "migrate")
	d := openDB(t, db).Driver
	pay := enqueueID(t, db, "k", "--queue", "pay")
	claimByID(t.Context(), t, d, pay, "gone", 50*time.Millisecond)
	waitFor(t, 10*time.Second, "the lease to expire", func() bool {
		v := showJob(t, db, pay)
		return v.Lease != nil && v.Lease.Expired
	})
	ok(t, db, "watch", "--once", "--reconcile", "pay=rec")
	recs, err := d.ListJobs(t.Context(), &leasehold.ListParams{Queue: "rec"})
	if err != nil || len(recs) != 1 {
		t.Fatalf("reconcile jobs after the watcher's pass: %v, %v; want one", recs, err)
	}
	rec := recs[0].ID

	out := ok(t, db, "jobs", "cancel", itoa(rec))
	for _, want := range []string{
		"job " + itoa(rec) + " cancelled",
		"job " + itoa(pay) + ", which reconcile job " + itoa(rec) + " was deciding (attempt 1), is now stuck",
		"leasehold jobs retry " + itoa(pay),
	} {
		if !strings.Contains(out, want) {
			t.Errorf("jobs cancel of the reconcile job said %q; want it to say %q", out, want)
		}
	}
	out = ok(t, db, "jobs", "stuck", "--queue", "pay")
	if !strings.Contains(out, "stuck: reconcile job "+itoa(rec)+" was cancelled by an operator") {
		t.Errorf("jobs stuck after the reconcile job was cancelled said %q", out)
	}
	ok(t, db, "watch", "--once", "--reconcile", "pay=rec")
	if v := showJob(t, db, pay); v.Status != string(leasehold.StateStuck) {
		t.Errorf("job %d after the watcher's next pass: %s, want stuck", pay, v.Status)
	}
}
