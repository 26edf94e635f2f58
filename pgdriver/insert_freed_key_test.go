package pgdriver

import (
	"testing"
	"time"

	leasehold "github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// keyedJob returns insert params for a job of kind "k" in queue q whose
// key is held while it is unfinished.
func keyedJob(key string) *driver.InsertParams {
	p := job("q")
	p.UniqueKey, p.UniqueWhileUnfinished = key, true
	return p
}

// freedKeyInsert starts batch on a driver that stalls just after the
// batch's first insert, in which a key held by a claimed job was skipped,
// and finishes that job during the stall: the key's holder leaves its
// scope between the insert and the read of the holders. It returns the
// test's driver, the stall and the batch's outcome.
func freedKeyInsert(t *testing.T, held string, batch []*driver.InsertParams) (*Driver, *stallAfter, <-chan insertOutcome) {
	t.Helper()
	d, url := newTestDriver(t)
	ctx := testCtx(t)
	if _, err := d.Insert(ctx, nil, []*driver.InsertParams{keyedJob(held)}); err != nil {
		t.Fatal(err)
	}
	h := claimOne(t, d, "q", "w", leaseTTL)
	x, st := stallingDriver(t, url, insertKeyedQuietSQL, 30*time.Second)
	out := make(chan insertOutcome, 1)
	go func() {
		res, err := x.Insert(ctx, nil, batch)
		out <- insertOutcome{res, err}
	}()
	select {
	case <-st.stalled:
	case o := <-out:
		t.Fatalf("the insert ended before its stall: %v", o.err)
	}
	if !finish(t, d, nil, &driver.FinishParams{ID: h.ID, Owner: "w", Attempt: h.Attempt,
		Transition: transition(leasehold.OutcomeCompleted, "")}) {
		t.Fatal("finish of the key's holder refused")
	}
	return d, st, out
}

// insertOutcome is what an Insert returned.
type insertOutcome struct {
	res []*leasehold.InsertResult
	err error
}

// TestInsertKeyedFreedKeyNoDeadlock: batch X skips key b, held by an
// unfinished job, and inserts c; b's holder finishes before X reads it;
// batch Y with the same keys then inserts b and waits for X's c. X must
// not take b after c in the same transaction: it would wait for Y, which
// waits for X, and PostgreSQL would end one with a deadlock error.
func TestInsertKeyedFreedKeyNoDeadlock(t *testing.T) {
	d, st, xout := freedKeyInsert(t, "b", []*driver.InsertParams{keyedJob("b"), keyedJob("c")})
	yout := make(chan insertOutcome, 1)
	go func() {
		res, err := d.Insert(testCtx(t), nil, []*driver.InsertParams{keyedJob("b"), keyedJob("c")})
		yout <- insertOutcome{res, err}
	}()
	time.Sleep(500 * time.Millisecond) // Y inserts b, then waits for X's c
	st.release()
	x, y := <-xout, <-yout
	if x.err != nil || y.err != nil {
		t.Fatalf("two racing batches with keys b and c: X: %v, Y: %v", x.err, y.err)
	}
	for i := range 2 {
		if x.res[i].Job.ID != y.res[i].Job.ID || x.res[i].Duplicate == y.res[i].Duplicate {
			t.Errorf("job %d: X got %d (duplicate %t), Y got %d (duplicate %t): want one job, new for one batch only",
				i, x.res[i].Job.ID, x.res[i].Duplicate, y.res[i].Job.ID, y.res[i].Duplicate)
		}
	}
}

// TestInsertKeyedFreedKeyBatchOrder: a batch [b, a] skips b, held by an
// unfinished job that finishes before the read of the holders. Both jobs
// are then inserted, their ids in batch order (b's first), as for any
// batch: ids are the last key of claim order.
func TestInsertKeyedFreedKeyBatchOrder(t *testing.T) {
	_, st, out := freedKeyInsert(t, "b", []*driver.InsertParams{keyedJob("b"), keyedJob("a")})
	st.release()
	o := <-out
	if o.err != nil {
		t.Fatal(o.err)
	}
	b, a := o.res[0], o.res[1]
	if b.Duplicate || a.Duplicate {
		t.Fatalf("duplicates after b's holder finished: b %t, a %t; want both inserted", b.Duplicate, a.Duplicate)
	}
	if b.Job.ID >= a.Job.ID {
		t.Errorf("ids of the batch [b, a]: b %d, a %d; want them in batch order", b.Job.ID, a.Job.ID)
	}
}
