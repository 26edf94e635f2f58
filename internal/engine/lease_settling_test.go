package engine

import (
	"slices"
	"testing"
	"time"

	"github.com/leasehold/leasehold/leasetype"
)

// TestSettlingLeases: Settling names the leases whose outcome was
// submitted and whose safe window has passed, and no other: not a running
// lease past its window (the watchdog gives it up, and a takeover is the
// protocol's answer), nor a submitted one still inside its window (it
// cannot have expired in the database).
func TestSettlingLeases(t *testing.T) {
	win := &Window{TTL: 10 * time.Second, Margin: 2 * time.Second, Clock: NewClock()}
	s := NewLeases()
	add := func(id int64, renewedAgo time.Duration, finalized bool) {
		l := &Lease{Row: &leasetype.JobRow{ID: id, Attempt: 1}, window: win}
		l.renewedAt.Store(win.Clock.Now() - int64(renewedAgo))
		l.finalized.Store(finalized)
		s.add(l)
	}
	add(1, 9*time.Second, true)  // outcome waiting, past its safe window (8 s)
	add(2, 7*time.Second, true)  // outcome waiting, inside its window
	add(3, 9*time.Second, false) // handler running, past its window
	add(4, time.Minute, true)    // outcome waiting through a long outage
	got := s.Settling(win.Clock.Now())
	slices.Sort(got)
	if !slices.Equal(got, []int64{1, 4}) {
		t.Fatalf("Settling = %v, want [1 4]", got)
	}
}
