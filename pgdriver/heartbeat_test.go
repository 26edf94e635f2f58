package pgdriver

import (
	"context"
	"testing"
	"time"

	"github.com/leasehold/leasehold/driver"
)

// TestHeartbeatBesideLockedRow: a business transaction that holds one
// job's row (FenceTx) holds back only that lease's renewal. The
// heartbeat does not wait for it: it renews the client's other lease and
// returns the held one Locked, with its expiry unchanged; once the
// transaction ends, both are renewed again.
func TestHeartbeatBesideLockedRow(t *testing.T) {
	d, _ := newTestDriver(t)
	ctx := testCtx(t)
	insertJobs(t, d, "q", 2)
	jobs, err := d.Claim(ctx, &driver.ClaimParams{Queue: "q", Kinds: []string{"k"}, Owner: "w", TTL: time.Minute, Limit: 2})
	if err != nil || len(jobs) != 2 {
		t.Fatalf("Claim: %d jobs, %v", len(jobs), err)
	}
	fenced, other := jobs[0], jobs[1]
	tx, err := d.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if err := d.FenceTx(ctx, tx, &driver.FenceParams{ID: fenced.ID, Owner: "w", Attempt: fenced.Attempt}); err != nil {
		t.Fatalf("FenceTx: %v", err)
	}
	beat := func() map[int64]*driver.HeartbeatResult {
		t.Helper()
		hctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		res, err := d.Heartbeat(hctx, &driver.HeartbeatParams{Owner: "w", TTL: 2 * time.Minute, Leases: []driver.LeaseRef{
			{ID: fenced.ID, Attempt: fenced.Attempt}, {ID: other.ID, Attempt: other.Attempt}}})
		if err != nil {
			t.Fatalf("Heartbeat beside a transaction that holds job %d's row: %v", fenced.ID, err)
		}
		byID := map[int64]*driver.HeartbeatResult{}
		for _, r := range res {
			byID[r.ID] = r
		}
		if len(res) != 2 || len(byID) != 2 {
			t.Fatalf("Heartbeat returned %+v; want both leases once", res)
		}
		return byID
	}
	got := beat()
	if !got[fenced.ID].Locked || got[other.ID].Locked {
		t.Fatalf("Locked: held row %v, other %v; want true, false", got[fenced.ID].Locked, got[other.ID].Locked)
	}
	if j := getJob(t, d, other.ID); !j.LeaseUntil.After(other.LeaseUntil.Add(30 * time.Second)) {
		t.Fatalf("the other lease runs until %v, claimed until %v: not renewed", j.LeaseUntil, other.LeaseUntil)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	if j := getJob(t, d, fenced.ID); !j.LeaseUntil.Equal(fenced.LeaseUntil) {
		t.Fatalf("the held lease runs until %v, claimed until %v: renewed while its row was held", j.LeaseUntil, fenced.LeaseUntil)
	}
	got = beat()
	if got[fenced.ID].Locked || got[other.ID].Locked {
		t.Fatalf("after the transaction ended, Locked: %v, %v; want both renewed", got[fenced.ID].Locked, got[other.ID].Locked)
	}
	if j := getJob(t, d, fenced.ID); !j.LeaseUntil.After(fenced.LeaseUntil.Add(30 * time.Second)) {
		t.Fatalf("the formerly held lease runs until %v: not renewed after its row was free", j.LeaseUntil)
	}
}
