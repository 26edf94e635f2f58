package engine

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/statemachine"
	"github.com/leasehold/leasehold/leasetype"
)

// attemptFencedDB is a Finisher that fences as the drivers do, by job and
// attempt: a write applies only for the job's current attempt, and Finish
// names the jobs written, not the attempts.
type attemptFencedDB struct {
	mu      sync.Mutex
	current map[int64]int
}

func (db *attemptFencedDB) Finish(_ context.Context, _ any, ps []*driver.FinishParams) ([]driver.FinishResult, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	var ids []driver.FinishResult
	for _, p := range ps {
		if db.current[p.ID] == p.Attempt {
			delete(db.current, p.ID)
			ids = append(ids, driver.FinishResult{ID: p.ID})
		}
	}
	return ids, nil
}

// TestTwoAttemptsOfOneJobInOneBatch: the outcome of a lease this client
// lost (attempt 1) and that of the attempt that took the job over
// (attempt 2) are written in one statement. Only attempt 2's applies, and
// only it is reported finished; attempt 1's is reported refused.
func TestTwoAttemptsOfOneJobInOneBatch(t *testing.T) {
	db := &attemptFencedDB{current: map[int64]int{7: 2}}
	rec := &recorder{}
	leases := NewLeases()
	win := &Window{TTL: time.Minute, Margin: time.Second, Clock: NewClock()}
	k := NewCompleter(CompleterConfig{Finisher: db, Leases: leases, Window: win, Batch: 10,
		Emit: rec.emit, Logger: discard})
	for _, attempt := range []int{2, 1} { // queued before Start: one statement writes both
		row := &leasetype.JobRow{ID: 7, Kind: "k", Queue: "q", State: leasetype.StateProcessing, Attempt: attempt}
		l := &Lease{Row: row, window: win}
		leases.add(l)
		k.Submit(l.finish("w1", statemachine.Ending{Outcome: leasetype.OutcomeCompleted}))
	}
	if err := k.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := k.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	got := map[leasetype.EventKind][]int{}
	rec.mu.Lock()
	for _, ev := range rec.evs {
		got[ev.Kind] = append(got[ev.Kind], ev.Job.Attempt)
	}
	rec.mu.Unlock()
	if f, r := got[leasetype.EventFinished], got[leasetype.EventFenceRefused]; len(f) != 1 || f[0] != 2 || len(r) != 1 || r[0] != 1 {
		t.Fatalf("finished attempts %v, refused attempts %v; want finished [2], refused [1]", f, r)
	}
}
