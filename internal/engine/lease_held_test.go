package engine

import (
	"slices"
	"testing"

	"github.com/leasehold/leasehold/leasetype"
)

// TestHeldLeases: Held names every lease of the set, running or with its
// outcome waiting, but those the watchdog gave up.
func TestHeldLeases(t *testing.T) {
	s := NewLeases()
	add := func(id int64, finalized, givenUp bool) {
		l := &Lease{Row: &leasetype.JobRow{ID: id, Attempt: 1}}
		l.finalized.Store(finalized)
		l.expiredLocally.Store(givenUp)
		s.add(l)
	}
	add(1, true, false)  // outcome waiting
	add(2, false, false) // handler running
	add(3, false, true)  // handler running on, lease given up
	got := s.Held()
	slices.Sort(got)
	if !slices.Equal(got, []int64{1, 2}) {
		t.Fatalf("Held = %v, want [1 2]", got)
	}
}
