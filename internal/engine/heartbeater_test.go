package engine

import (
	"context"
	"testing"
	"time"

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
	db := newFakeDB(rows(n)...)
	started := make(chan *leasetype.JobRow, n)
	r := newRig(t, db, rigOpts{run: blockUntilDone(started), ttl: time.Hour, margin: time.Minute, interval: 20 * time.Minute})
	t.Cleanup(func() { r.stop(50 * time.Millisecond) })
	leases := make([]*Lease, n)
	for i := range leases {
		row := <-started
		leases[i] = r.leas.Lookup(row.ID, row.Attempt)
	}
	return db, r, leases
}
