package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/statemachine"
)

// TestJobsShowResolution: `jobs show` prints the reconciler's decision
// recorded on a job's expired attempt, below its history, and --json
// gives it as the attempt's resolution; a job without one shows neither.
func TestJobsShowResolution(t *testing.T) {
	forEachDB(t, func(t *testing.T, db string) {
		id, recID, text := resolvedJob(t, db)
		if out := ok(t, db, "jobs", "show", fmt.Sprint(id)); !strings.Contains(out, "RESOLUTION") || !strings.Contains(out, text) {
			t.Errorf("jobs show %d does not show the resolution %q:\n%s", id, text, out)
		}
		if j := showJob(t, db, id); len(j.Attempts) != 1 || j.Attempts[0].Resolution != text {
			t.Errorf("jobs show %d --json attempts = %+v, want one with resolution %q", id, j.Attempts, text)
		}
		if out := ok(t, db, "jobs", "show", fmt.Sprint(recID)); strings.Contains(out, "RESOLUTION") {
			t.Errorf("jobs show %d, a job with no resolution, has a resolution table:\n%s", recID, out)
		}
		if out := ok(t, db, "--json", "jobs", "show", fmt.Sprint(recID)); strings.Contains(out, `"resolution"`) {
			t.Errorf("jobs show %d --json of a job with no resolution names one:\n%s", recID, out)
		}
	})
}

// resolvedJob makes a job of db whose lease expired in a reconciling
// queue and which its reconcile job then resolved as completed, through
// the driver; it returns both jobs' ids and the resolution recorded.
func resolvedJob(t *testing.T, db string) (id, recID int64, text string) {
	t.Helper()
	ctx := t.Context()
	d := openDB(t, db).Driver
	c, err := leasehold.NewClient(leasehold.Config{Driver: d})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Insert(ctx, leasehold.RawArgs{KindName: "payment.charge", JSON: json.RawMessage(`{}`)}, &leasehold.InsertOpts{Queue: "pay"})
	if err != nil {
		t.Fatal(err)
	}
	j := claimByID(ctx, t, d, res.Job.ID, "gone", time.Millisecond)
	time.Sleep(20 * time.Millisecond)
	into := statemachine.ReconcileTarget{Kind: "leasehold.reconcile", Queue: "rec", MaxAttempts: 5}
	decide := func(j *leasehold.JobRow) driver.Transition { return statemachine.Reconcile(j, into) }
	rescued, err := d.RescueExpired(ctx, &driver.RescueParams{Decide: decide})
	if err != nil || len(rescued) != 1 || rescued[0].ReconcileJobID == 0 {
		t.Fatalf("RescueExpired = %+v, %v; want job %d reconciling", rescued, err, j.ID)
	}
	rec := claimByID(ctx, t, d, rescued[0].ReconcileJobID, "reconciler", time.Minute)
	tr, err := statemachine.Resolve(statemachine.ResolveComplete, 0, "provider charged")
	if err != nil {
		t.Fatal(err)
	}
	text = fmt.Sprintf("completed by reconcile job %d (attempt 1): provider charged", rec.ID)
	_, err = d.Resolve(ctx, nil, &driver.ResolveParams{ID: rec.ID, Owner: "reconciler", LeaseAttempt: rec.Attempt,
		JobID: j.ID, Attempt: j.Attempt, Transition: tr, Resolution: text})
	if err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	return j.ID, rec.ID, text
}

// claimByID leases job id to owner for ttl.
func claimByID(ctx context.Context, t *testing.T, d driver.Driver, id int64, owner string, ttl time.Duration) *leasehold.JobRow {
	t.Helper()
	j, err := d.ClaimByID(ctx, &driver.ClaimByIDParams{ID: id, Owner: owner, TTL: ttl})
	if err != nil || j == nil {
		t.Fatalf("ClaimByID(%d, %s) = %v, %v", id, owner, j, err)
	}
	return j
}
