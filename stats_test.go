package leasehold

import "testing"

// TestStatsCountFailures: each failed statement kind has its own counter,
// fed by its event.
func TestStatsCountFailures(t *testing.T) {
	var s stats
	for _, k := range []EventKind{EventHeartbeatFailed, EventFinishFailed, EventFinishFailed,
		EventClaimFailed, EventClaimFailed, EventClaimFailed} {
		s.observe(&Event{Kind: k})
	}
	got := [3]int64{s.heartbeatErrors.Load(), s.finishErrors.Load(), s.claimErrors.Load()}
	if want := [3]int64{1, 2, 3}; got != want {
		t.Errorf("heartbeat, finish, claim errors = %v, want %v", got, want)
	}
}
