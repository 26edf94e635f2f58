package main

import (
	"strings"
	"testing"
	"time"
)

// TestRetryDeleteExpiredLease: `jobs retry` and `jobs delete` of a
// processing job whose lease expired (its worker gone, no watcher run
// yet) say that the lease expired and name the watcher pass that ends the
// attempt, with the queue's policy flags, rather than telling the
// operator to wait for a lease that already ended; a live lease keeps the
// message about waiting for it.
func TestRetryDeleteExpiredLease(t *testing.T) {
	forEachDB(t, func(t *testing.T, db string) {
		d := openDB(t, db).Driver
		expired := enqueueID(t, db, "k", "--queue", "payments")
		claimByID(t.Context(), t, d, expired, "gone", 50*time.Millisecond)
		live := enqueueID(t, db, "k", "--queue", "payments")
		claimByID(t.Context(), t, d, live, "alive", time.Hour)
		waitFor(t, 10*time.Second, "the lease to expire", func() bool {
			v := showJob(t, db, expired)
			return v.Lease != nil && v.Lease.Expired
		})

		for _, c := range []struct {
			cmd  string
			want []string
		}{
			{"retry", []string{"then retry it"}},
			{"delete", []string{"cancel it, ", "which ends it cancelled", "then delete it"}},
		} {
			r := lh(t, db, "jobs", c.cmd, itoa(expired))
			msg := r.stderr
			if r.code != 1 || strings.Contains(msg, "wait for it to end") || strings.Contains(msg, "has not finished") ||
				!strings.Contains(msg, "its lease expired") || !strings.Contains(msg, "leasehold watch --once") ||
				!strings.Contains(msg, "for queue payments") || !strings.Contains(msg, "--flag-stuck") ||
				!strings.Contains(msg, "--reconcile") {
				t.Errorf("jobs %s of a job whose lease expired: exit %d, %q", c.cmd, r.code, msg)
			}
			for _, w := range c.want {
				if !strings.Contains(msg, w) {
					t.Errorf("jobs %s of a job whose lease expired: %q does not say %q", c.cmd, msg, w)
				}
			}
		}
		if r := lh(t, db, "jobs", "retry", itoa(live)); r.code != 1 || !strings.Contains(r.stderr, "wait for it to end") {
			t.Errorf("jobs retry of a job with a live lease: exit %d, %q", r.code, r.stderr)
		}
		if r := lh(t, db, "jobs", "delete", itoa(live)); r.code != 1 || !strings.Contains(r.stderr, "has not finished") {
			t.Errorf("jobs delete of a job with a live lease: exit %d, %q", r.code, r.stderr)
		}
	})
}
