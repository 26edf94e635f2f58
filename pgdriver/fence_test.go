package pgdriver

import (
	"context"
	"errors"
	"testing"
	"time"

	leasehold "github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// TestFenceJudgesAfterTheRowLock: a fence whose job row another
// transaction has locked waits for it. When that transaction ends without
// changing the row, PostgreSQL locks the row without evaluating the
// statement's conditions again, so the lease must be judged by the clock
// once the lock is won: a lease that expired during the wait is lost.
func TestFenceJudgesAfterTheRowLock(t *testing.T) {
	d, _ := newTestDriver(t)
	ctx := testCtx(t)
	insertJobs(t, d, "q", 1)
	const ttl = time.Second
	row := claimOne(t, d, "q", "w", ttl)

	locker, err := d.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := locker.Exec(ctx, `SELECT 1 FROM leasehold_jobs WHERE id = $1 FOR UPDATE`, row.ID); err != nil {
		t.Fatal(err)
	}
	released := make(chan error, 1)
	go func() {
		time.Sleep(2 * ttl)
		released <- locker.Rollback(context.Background())
	}()
	tx, err := d.Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	err = d.FenceTx(ctx, tx, &driver.FenceParams{ID: row.ID, Owner: "w", Attempt: row.Attempt})
	if err := <-released; err != nil {
		t.Fatal(err)
	}
	if !errors.Is(err, leasehold.ErrLeaseLost) {
		t.Fatalf("FenceTx that won the row lock %v after the claim, past the lease's %v TTL: %v; want ErrLeaseLost",
			2*ttl, ttl, err)
	}
}
