package sqlitedriver

import (
	"context"
	"database/sql"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// refusePoisonSQL makes the database refuse, mid-batch, a job of kind
// "poison": a statement that fails in the caller's transaction without
// aborting it, as SQLite's statements do.
const refusePoisonSQL = `CREATE TRIGGER refuse_poison BEFORE INSERT ON leasehold_jobs
WHEN NEW.kind = 'poison' BEGIN SELECT RAISE(ABORT, 'poison job refused'); END`

// refuseCompletionSQL makes the database refuse a job's completion, the
// statement that follows the history row's in Finish.
const refuseCompletionSQL = `CREATE TRIGGER refuse_completion BEFORE UPDATE OF status ON leasehold_jobs
WHEN NEW.status = 'completed' BEGIN SELECT RAISE(ABORT, 'completion refused'); END`

// rowQuerier is a *sql.DB or a *sql.Tx.
type rowQuerier interface {
	QueryRow(query string, args ...any) *sql.Row
}

// queueJobs counts the jobs of queue that q sees.
func queueJobs(t *testing.T, q rowQuerier, queue string) int {
	t.Helper()
	var n int
	if err := q.QueryRow(`SELECT count(*) FROM leasehold_jobs WHERE queue = ?`, queue).Scan(&n); err != nil {
		t.Fatalf("count jobs of queue %s: %v", queue, err)
	}
	return n
}

// batchOf returns n jobs of queue, the kth (from 0) of kind "poison" when
// k >= 0.
func batchOf(queue string, n, k int) []leasehold.InsertManyParams {
	batch := make([]leasehold.InsertManyParams, n)
	for i := range batch {
		kind := "k"
		if i == k {
			kind = "poison"
		}
		batch[i] = leasehold.InsertManyParams{Args: leasehold.RawArgs{KindName: kind}, Opts: &leasehold.InsertOpts{Queue: queue}}
	}
	return batch
}

// TestInsertManyInCallerTxRefusedPartWayInsertsNothing: when the database
// refuses a job in the middle of Client.InsertMany in the caller's
// transaction, the jobs before it are not left in the transaction, which
// stays usable: a later insert in it commits, alone.
func TestInsertManyInCallerTxRefusedPartWayInsertsNothing(t *testing.T) {
	d := openTest(t)
	ctx := testCtx(t)
	if _, err := d.DB().ExecContext(ctx, refusePoisonSQL); err != nil {
		t.Fatal(err)
	}
	c, err := leasehold.NewClient(leasehold.Config{Driver: d})
	if err != nil {
		t.Fatal(err)
	}
	tx, err := d.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := c.InsertMany(ctx, tx, batchOf("batch", 5, 3)); err == nil {
		t.Fatal("InsertMany of a batch with a refused job succeeded")
	}
	if n := queueJobs(t, tx, "batch"); n != 0 {
		t.Errorf("after the failed InsertMany, %d jobs of the batch are in the caller's transaction, want 0", n)
	}
	if _, err := c.InsertTx(ctx, tx, leasehold.RawArgs{KindName: "k"}, &leasehold.InsertOpts{Queue: "later"}); err != nil {
		t.Fatalf("InsertTx in the caller's transaction after the failed InsertMany: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if n := queueJobs(t, d.DB(), "batch"); n != 0 {
		t.Errorf("%d jobs of the failed batch committed with the caller's transaction, want 0", n)
	}
	if n := queueJobs(t, d.DB(), "later"); n != 1 {
		t.Errorf("%d jobs of the later insert committed, want 1", n)
	}
}

// endingCtx is a context that ends at its n-th call to Done: it ends
// while InsertMany runs, after a number of statements that grows with n.
// database/sql and the SQLite driver call it from several goroutines.
type endingCtx struct {
	context.Context
	n      int64
	calls  atomic.Int64
	closed chan struct{}
}

func (c *endingCtx) Done() <-chan struct{} {
	if c.calls.Add(1) >= c.n {
		return c.closed
	}
	return nil
}

func (c *endingCtx) Err() error {
	if c.calls.Load() >= c.n {
		return context.Canceled
	}
	return nil
}

// TestInsertManyInCallerTxEndingPartWayInsertsNothing: when InsertMany's
// context ends part way through a batch in the caller's transaction, at
// whichever statement, none of the batch commits with that transaction.
func TestInsertManyInCallerTxEndingPartWayInsertsNothing(t *testing.T) {
	d := openTest(t)
	c, err := leasehold.NewClient(leasehold.Config{Driver: d})
	if err != nil {
		t.Fatal(err)
	}
	failed := 0
	for n := int64(1); ; n++ {
		if n > 500 {
			t.Fatal("InsertMany still fails after 500 calls to its context's Done")
		}
		queue := fmt.Sprintf("q%d", n)
		tx, err := d.DB().BeginTx(context.Background(), nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx := &endingCtx{Context: context.Background(), n: n, closed: make(chan struct{})}
		close(ctx.closed)
		_, ierr := c.InsertMany(ctx, tx, batchOf(queue, 5, -1))
		if ierr == nil {
			_ = tx.Rollback()
			break
		}
		failed++
		// The commit may fail: a statement interrupted as the context
		// ends rolls back the whole transaction. What matters is that no
		// job of the failed batch commits.
		_ = tx.Commit()
		if got := queueJobs(t, d.DB(), queue); got != 0 {
			t.Fatalf("context ending at its call %d to Done: InsertMany failed (%v), yet %d of the 5 jobs committed with the caller's transaction",
				n, ierr, got)
		}
	}
	if failed == 0 {
		t.Fatal("InsertMany never failed: the context did not end during the call")
	}
}

// TestFinishInCallerTxRefusedLeavesNoHistory: when the job's update fails
// after Finish wrote the attempt's history row in the caller's
// transaction (as CompleteTx does), the history row is not left in the
// transaction, which stays usable and commits the caller's own writes.
func TestFinishInCallerTxRefusedLeavesNoHistory(t *testing.T) {
	d := openTest(t)
	ctx := testCtx(t)
	held := claimOne(t, d, 3)
	if _, err := d.DB().ExecContext(ctx, refuseCompletionSQL); err != nil {
		t.Fatal(err)
	}
	tx, err := d.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := d.Finish(ctx, tx, []*driver.FinishParams{completion(held)}); err == nil {
		t.Fatal("Finish with the completion refused succeeded")
	}
	ended := func(q rowQuerier) int {
		var n int
		if err := q.QueryRow(`SELECT count(*) FROM leasehold_attempts WHERE job_id = ? AND ended_at IS NOT NULL`, held.ID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if n := ended(tx); n != 0 {
		t.Errorf("after the failed Finish, %d ended attempts of job %d are in the caller's transaction, want 0", n, held.ID)
	}
	if _, err := d.Insert(ctx, tx, []*driver.InsertParams{{Kind: "k", Queue: "later", MaxAttempts: 1}}); err != nil {
		t.Fatalf("Insert in the caller's transaction after the failed Finish: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	if n := ended(d.DB()); n != 0 {
		t.Errorf("%d ended attempts of job %d committed, though its completion failed; want 0", n, held.ID)
	}
	if got := mustGet(t, d, held.ID); got.State != leasehold.StateProcessing {
		t.Errorf("job %d is %s, want %s", held.ID, got.State, leasehold.StateProcessing)
	}
	if n := queueJobs(t, d.DB(), "later"); n != 1 {
		t.Errorf("%d jobs of the later insert committed, want 1", n)
	}
}
