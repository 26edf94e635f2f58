package engine

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/leasetype"
)

// TestRenewalCountsFromTheSend: a renewal's safe window starts when the
// heartbeat was sent, not when its reply came back. The database starts
// the new lease no earlier than the send, so a window timed from a slow
// reply would let the handler run past the lease the database holds.
func TestRenewalCountsFromTheSend(t *testing.T) {
	db, r, held := heldLeases(t, 1)
	l := held[0]
	const delay = 300 * time.Millisecond
	db.mu.Lock()
	db.hbDelay = delay
	db.mu.Unlock()
	before := r.win.Clock.Now()
	r.hb.Beat(context.Background())
	after := r.win.Clock.Now()
	renewed := l.renewedAt.Load()
	if renewed < before {
		t.Fatalf("lease not renewed: renewed at %v, the beat began at %v", time.Duration(renewed), time.Duration(before))
	}
	if got := time.Duration(after - renewed); got < delay {
		t.Fatalf("renewal counted from %v before the reply came back; want at least the reply's %v delay (from the send)", got, delay)
	}
}

// heldLeases starts a rig whose n handlers run until their context ends,
// and returns their leases. The leases' hour-long TTL and the 20-minute
// interval leave every renewal to the test (Heartbeater.Beat) and keep
// the watchdog out of it. The rig stops with a short timeout: the
// handlers wait for their context.
func heldLeases(t *testing.T, n int) (*fakeDB, *rig, []*Lease) {
	t.Helper()
	db, r, started := heldRig(t, n, n)
	leases := make([]*Lease, n)
	for i := range leases {
		leases[i] = startedLease(r, <-started)
	}
	return db, r, leases
}

// heldRig is heldLeases without the wait: it returns the channel on
// which each handler announces its job as it starts, with room for
// capacity announcements.
func heldRig(t *testing.T, n, capacity int) (*fakeDB, *rig, <-chan *leasetype.JobRow) {
	t.Helper()
	db := newFakeDB(rows(n)...)
	started := make(chan *leasetype.JobRow, capacity)
	r := newRig(t, db, rigOpts{run: blockUntilDone(started), ttl: time.Hour, margin: time.Minute, interval: 20 * time.Minute})
	t.Cleanup(func() { r.stop(50 * time.Millisecond) })
	return db, r, started
}

// startedLease returns the lease whose handler announced row.
func startedLease(r *rig, row *leasetype.JobRow) *Lease {
	return r.leas.Lookup(row.ID, row.Attempt)
}

// TestHeartbeatOlderAttemptOfOneJobIsLost: this client holds attempts 1
// and 2 of one job (attempt 1's lease expired, another process's watcher
// made the job pending again, and this client claimed it once more while
// attempt 1's handler still ran). Heartbeat results name job ids only, so
// the job's one result must not count for both: attempt 1 is lost (its
// handler cancelled with ErrLeaseLost, one lease_lost event) and attempt
// 2 renewed.
func TestHeartbeatOlderAttemptOfOneJobIsLost(t *testing.T) {
	db, r, started := heldRig(t, 1, 2)
	first := startedLease(r, <-started)
	// A new row value: the fake's claim bumps the attempt of the row it
	// hands out, and attempt 1's lease keeps its own.
	db.add(&leasetype.JobRow{ID: 1, Kind: "k", Queue: "q", State: leasetype.StatePending, Attempt: 1, MaxAttempts: 3})
	second := startedLease(r, <-started)
	if first == nil || second == nil || first.Row.Attempt != 1 || second.Row.Attempt != 2 {
		t.Fatalf("leases held: %v and %v; want attempts 1 and 2 of job 1", first, second)
	}
	before := r.win.Clock.Now()
	r.hb.Beat(context.Background())

	if cause := context.Cause(first.Context()); !errors.Is(cause, leasetype.ErrLeaseLost) {
		t.Fatalf("attempt 1's handler context after the beat: %v, want cancelled with ErrLeaseLost", cause)
	}
	if first.renewedAt.Load() >= before {
		t.Fatal("attempt 1's lease counted as renewed by its job's result, which is attempt 2's")
	}
	if err := second.Context().Err(); err != nil {
		t.Fatalf("attempt 2's handler context after the beat: %v, want running", context.Cause(second.Context()))
	}
	if second.renewedAt.Load() < before {
		t.Fatal("attempt 2's lease not renewed by the beat")
	}
	if lost := lostAttempts(r.rec); !slices.Equal(lost, []int{1}) {
		t.Fatalf("lease_lost events for attempts %v, want [1]", lost)
	}
}

// lostAttempts returns the attempts of the lease_lost events recorded, in
// order.
func lostAttempts(rec *recorder) []int {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	var out []int
	for _, ev := range rec.evs {
		if ev.Kind == leasetype.EventLeaseLost {
			out = append(out, ev.Job.Attempt)
		}
	}
	return out
}

// refRecorder is a Renewer that records the leases of each Heartbeat
// call before passing it on. Beat calls it from one goroutine only.
type refRecorder struct {
	Renewer
	calls [][]driver.LeaseRef
}

// Heartbeat implements Renewer.
func (r *refRecorder) Heartbeat(ctx context.Context, p *driver.HeartbeatParams) ([]*driver.HeartbeatResult, error) {
	r.calls = append(r.calls, slices.Clone(p.Leases))
	return r.Renewer.Heartbeat(ctx, p)
}

// TestHeartbeatRenewsEveryChunk: a client holding more than
// heartbeatChunk leases renews them in one statement per chunk, and a
// beat renews every lease exactly once, not only the first chunk's.
func TestHeartbeatRenewsEveryChunk(t *testing.T) {
	const n = 2*heartbeatChunk + 1
	db := newFakeDB()
	win := &Window{TTL: time.Hour, Margin: time.Minute, Clock: NewClock()}
	set := NewLeases()
	all := make([]*Lease, n)
	for i := range all {
		l := &Lease{Row: &leasetype.JobRow{ID: int64(i + 1), Kind: "k", Queue: "q", State: leasetype.StateProcessing, Attempt: 1}, window: win}
		l.ctx, l.cancel = context.WithCancelCause(context.Background())
		set.add(l)
		db.held[l.Row.ID] = true
		all[i] = l
	}
	ren := &refRecorder{Renewer: db}
	rec := &recorder{}
	hb := NewHeartbeater(HeartbeaterConfig{Renewer: ren, Leases: set, Window: win, Owner: "w1",
		Interval: time.Minute, Emit: rec.emit, Logger: discard})
	before := win.Clock.Now()
	hb.Beat(context.Background())

	if want := (n + heartbeatChunk - 1) / heartbeatChunk; len(ren.calls) != want {
		t.Fatalf("one beat of %d leases made %d Heartbeat calls, want %d (one per %d leases)", n, len(ren.calls), want, heartbeatChunk)
	}
	sent := make(map[driver.LeaseRef]int, n)
	for i, c := range ren.calls {
		if len(c) > heartbeatChunk {
			t.Fatalf("Heartbeat call %d renews %d leases, more than a chunk (%d)", i, len(c), heartbeatChunk)
		}
		for _, ref := range c {
			sent[ref]++
		}
	}
	if len(sent) != n {
		t.Fatalf("the beat sent %d distinct leases, want all %d", len(sent), n)
	}
	for _, l := range all {
		if k := sent[l.Ref()]; k != 1 {
			t.Fatalf("lease %v sent %d times in one beat, want once", l.Ref(), k)
		}
		if l.renewedAt.Load() < before || l.ctx.Err() != nil {
			t.Fatalf("lease %v after the beat: renewed at %v (beat at %v), context %v; want renewed and running",
				l.Ref(), time.Duration(l.renewedAt.Load()), time.Duration(before), context.Cause(l.ctx))
		}
	}
	if k := rec.count(leasetype.EventHeartbeat); k != len(ren.calls) {
		t.Fatalf("%d heartbeat events for %d statements, want one each", k, len(ren.calls))
	}
}
