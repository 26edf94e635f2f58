package engine

import (
	"slices"
	"testing"
	"time"

	"github.com/leasehold/leasehold/leasetype"
)

// TestOutcomesHeldThroughAnOutageWrittenAtOnce: outcomes submitted one at
// a time while the database is down, each taken from the queue by the
// outcome failing alone ahead of them, are all written as soon as the
// database is back, oldest first (or together), not one backoff apart.
func TestOutcomesHeldThroughAnOutageWrittenAtOnce(t *testing.T) {
	db := newFakeDB()
	db.down = true
	r := newCompleterRig(t, db, refusedUnlessFlaky)
	const n = 8
	for _, row := range rows(n) {
		r.submit(row)
		// A little over the backoff's cap apart: each is taken from the
		// queue alone, by a retry of its own.
		time.Sleep(1200 * time.Millisecond)
	}
	db.mu.Lock()
	db.down = false
	db.mu.Unlock()
	back := time.Now()
	for len(db.outcomes()) < n {
		if time.Since(back) > 30*time.Second {
			t.Fatalf("%d of %d outcomes written 30 s after the database came back", len(db.outcomes()), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
	took := time.Since(back)
	db.mu.Lock()
	var order []int64
	for _, p := range db.finished {
		order = append(order, p.ID)
	}
	db.mu.Unlock()
	t.Logf("%d outcomes written %v after the database came back, in order %v", n, took, order)
	if took > 3*time.Second {
		t.Errorf("%d outcomes written %v after the database came back; want them at once", n, took)
	}
	if !slices.IsSorted(order) {
		t.Errorf("outcomes written in order %v; want the order they came in", order)
	}
	waitFor(t, "their leases forgotten", func() bool { return r.leases.Len() == 0 })
	if got := r.rec.count(leasetype.EventFinished); got != n {
		t.Errorf("%d EventFinished; want %d", got, n)
	}
}
