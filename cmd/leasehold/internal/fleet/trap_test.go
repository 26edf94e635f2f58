package fleet

import (
	"testing"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/payments"
)

// TestTrap: once armed (after its skip), the trap catches the next
// charges of eligible workers, one per worker, as many as armed, and
// hands them over; it stalls a random share besides.
func TestTrap(t *testing.T) {
	var stalled []string
	trap := NewTrap(0, 1, func(req payments.ChargeRequest, caught bool) {
		if caught {
			stalled = append(stalled, req.Owner)
		} else {
			stalled = append(stalled, "random "+req.Owner)
		}
	})
	for _, o := range []string{"a", "b", "c"} {
		trap.setEligible(o, true)
	}
	trap.setEligible("c", false)
	charge := func(owner string) bool { return trap.Stall(payments.ChargeRequest{Owner: owner}) }
	if charge("a") {
		t.Error("a disarmed trap caught a charge")
	}
	trap.ArmAfter(1, 2)
	steps := []struct {
		owner string
		want  bool
	}{
		{"a", false}, // skipped
		{"c", false}, // not eligible
		{"x", false}, // unknown
		{"a", true},
		{"a", false}, // one catch per worker
		{"b", true},
		{"b", false}, // the two are caught
	}
	for i, s := range steps {
		if got := charge(s.owner); got != s.want {
			t.Errorf("charge %d of %s: stalled %v, want %v", i, s.owner, got, s.want)
		}
	}
	if a, b := <-trap.Caught(), <-trap.Caught(); a.Owner != "a" || b.Owner != "b" {
		t.Errorf("caught %s, %s; want a, b", a.Owner, b.Owner)
	}
	trap.Arm(1)
	trap.Disarm()
	if charge("a") {
		t.Error("a disarmed trap caught a charge")
	}
	random := NewTrap(1, 1, nil)
	if !random.Stall(payments.ChargeRequest{Owner: "x"}) {
		t.Error("prob 1 did not stall")
	}
	if len(stalled) != 2 || stalled[0] != "a" || stalled[1] != "b" {
		t.Errorf("onStall saw %v, want a, b", stalled)
	}
}
