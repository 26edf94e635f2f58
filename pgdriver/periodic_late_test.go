package pgdriver

import (
	"testing"
	"time"

	"github.com/leasehold/leasehold/driver"
)

// TestPeriodicLateClaimWaitsForOnTimeClaim: process A's claim of a slot
// runs before the slot's deadline and commits after it; process B's
// claim of the same slot, made past the deadline while A's transaction
// is open, inserts nothing (the deadline leaves its insert out, so it
// never waits on the row) but must still wait for A and report the slot
// taken, not late: a late report would have B warn of a slot A enqueued.
func TestPeriodicLateClaimWaitsForOnTimeClaim(t *testing.T) {
	d, _ := newTestDriver(t)
	ctx := testCtx(t)
	base := time.Now().Truncate(time.Second).Add(-time.Minute)
	slot := func(n int, deadline time.Time) *driver.PeriodicInsertParams {
		return &driver.PeriodicInsertParams{Name: "s", Spec: "@every 1s",
			Slot: base.Add(time.Duration(n) * time.Second), Next: base.Add(time.Duration(n+1) * time.Second),
			Job: &driver.InsertParams{Kind: "tick", Queue: "default", Args: []byte(`{}`), MaxAttempts: 1}, Deadline: deadline}
	}
	if res, err := d.PeriodicInsert(ctx, slot(0, time.Time{})); err != nil || !res.Claimed {
		t.Fatalf("slot 0: %+v, %v", res, err)
	}
	deadline := time.Now().Add(300 * time.Millisecond)
	tx, err := d.pool.Begin(ctx) // A
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	a := slot(1, deadline)
	var name string
	if err := tx.QueryRow(ctx, periodicClaimSQL, a.Name, a.Spec, a.Job.Kind, a.Job.Queue, a.Slot, nullTime(a.Next),
		nullDuration(a.Grace), nullTime(a.Deadline)).Scan(&name); err != nil {
		t.Fatalf("A's claim: %v", err)
	}
	time.Sleep(time.Until(deadline) + 200*time.Millisecond) // A's insert is slow; the deadline passes
	committed := make(chan error, 1)
	go func() { time.Sleep(300 * time.Millisecond); committed <- tx.Commit(ctx) }()
	res, err := d.PeriodicInsert(ctx, slot(1, deadline)) // B
	if cerr := <-committed; cerr != nil {
		t.Fatalf("A's commit: %v", cerr)
	}
	if err != nil {
		t.Fatalf("B's claim: %v", err)
	}
	if res.Claimed || res.Late {
		t.Errorf("B's claim of the slot A claimed in time = claimed %v, late %v; want taken (neither)", res.Claimed, res.Late)
	}
}
