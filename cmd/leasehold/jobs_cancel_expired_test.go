package main

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestJobsCancelExpiredLease: cancelling a processing job whose lease has
// expired (its worker is gone) says that the stuck watcher ends it, not
// that a handler stops at a heartbeat that will never come; a live lease
// still gets the heartbeat message.
func TestJobsCancelExpiredLease(t *testing.T) {
	db := "sqlite:" + t.TempDir() + "/lh.db"
	ok(t, db, "migrate")
	d := openDB(t, db).Driver
	expired := enqueueID(t, db, "k")
	claimByID(t.Context(), t, d, expired, "gone", 50*time.Millisecond)
	live := enqueueID(t, db, "k")
	claimByID(t.Context(), t, d, live, "alive", time.Hour)
	waitFor(t, 10*time.Second, "the lease to expire", func() bool {
		v := showJob(t, db, expired)
		return v.Lease != nil && v.Lease.Expired
	})

	out := ok(t, db, "jobs", "cancel", itoa(expired))
	if strings.Contains(out, "heartbeat") || !strings.Contains(out, "its lease expired") ||
		!strings.Contains(out, "the stuck watcher ends the job at its next pass") ||
		!strings.Contains(out, "its reconciler decides first") {
		t.Errorf("jobs cancel of a job whose lease expired said %q", out)
	}
	if out := ok(t, db, "jobs", "cancel", itoa(live)); !strings.Contains(out, "its handler stops at the next heartbeat") {
		t.Errorf("jobs cancel of a job with a live lease said %q", out)
	}
}

// itoa formats a job id as a command-line argument.
func itoa(id int64) string { return strconv.FormatInt(id, 10) }
