//go:build unix

package fleet

import (
	"testing"
	"time"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/payments"
)

// TestFreezeThaw: a frozen worker reports nothing (a real SIGSTOP), is
// neither picked, found running nor caught by the trap; thawed, it runs
// on. Close kills a worker even while it is frozen.
func TestFreezeThaw(t *testing.T) {
	trap := NewTrap(0, 1, nil)
	f := New(trap)
	p := startHelper(t, f, "sigterm", "w1", nil)
	waitFor(t, "it reports", func() bool { return claimed(p) > 0 })
	if err := f.Freeze(p); err != nil {
		t.Fatal(err)
	}
	time.Sleep(50 * time.Millisecond) // a line already written may still arrive
	before := claimed(p)
	time.Sleep(300 * time.Millisecond)
	if after := claimed(p); after != before || !p.Frozen() || !p.Alive() {
		t.Fatalf("frozen worker: reports %d -> %d, frozen %v, alive %v", before, after, p.Frozen(), p.Alive())
	}
	trap.Arm(1)
	if f.Running("w1") != nil || trap.Stall(payments.ChargeRequest{Owner: "w1"}) {
		t.Error("a frozen worker is running or caught")
	}
	if err := f.Thaw(p); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "it reports again", func() bool { return claimed(p) > before })
	if f.Running("w1") != p || !trap.Stall(payments.ChargeRequest{Owner: "w1"}) {
		t.Error("a thawed worker is not running, or not caught")
	}
	if err := f.Freeze(p); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if !p.Killed() || p.Alive() {
		t.Errorf("Close left a frozen worker: killed %v, alive %v", p.Killed(), p.Alive())
	}
}
