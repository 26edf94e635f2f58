package web

import (
	"testing"
	"time"

	"github.com/leasehold/leasehold/view"
)

// TestTimelineExpiredUnrescued: a processing job whose lease expired (its
// worker killed) and that no watcher has rescued yet (claimed at 0, last
// heartbeat at +2s, lease until +5s, now +16s) is drawn held only to its
// last heartbeat and unrenewed (hatched) from there to now, not held and
// renewed up to now.
func TestTimelineExpiredUnrescued(t *testing.T) {
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	at := func(s float64) *time.Time { v := t0.Add(time.Duration(s * float64(time.Second))); return &v }
	x := func(s float64) float64 { return tlLabel + s/16*float64(tlWidth-tlLabel-10) }
	near := func(t *testing.T, what string, got, want float64) {
		t.Helper()
		if got < want-0.01 || got > want+0.01 {
			t.Errorf("%s = %.2f, want %.2f", what, got, want)
		}
	}
	for _, tc := range []struct {
		name      string
		heartbeat *time.Time
		held      float64
	}{
		{"heartbeat", at(2), 2},
		{"no heartbeat", nil, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := view.JobInfoView{
				JobView:  view.JobView{ID: 1, Attempt: 1, Lease: &view.LeaseView{Owner: "a", Until: *at(5), Expired: true, LeftSeconds: -11}},
				Attempts: []view.AttemptView{{Attempt: 1, Owner: "a", ClaimedAt: t0, HeartbeatAt: tc.heartbeat, Outcome: "running"}},
			}
			tl := newTimeline(j, *at(16))
			if tl == nil || len(tl.Bars) != 1 {
				t.Fatalf("timeline = %+v", tl)
			}
			b := tl.Bars[0]
			near(t, "W (held to the last heartbeat or the claim)", b.W, max(x(tc.held)-x(0), tlMinBar))
			near(t, "TailX", b.TailX, x(tc.held))
			near(t, "TailW (unrenewed to now)", b.TailW, x(16)-x(tc.held))
			near(t, "EndX", b.EndX, x(16))
			near(t, "ExpiryX (the lease's end marked)", b.ExpiryX, x(5))
			if b.TailClass != "unrenewed" {
				t.Errorf("TailClass = %q, want unrenewed", b.TailClass)
			}
			if b.FenceX >= 0 || b.TakenOverBy != "" {
				t.Errorf("an unrescued lease is drawn fenced or taken over: FenceX %.2f, TakenOverBy %q", b.FenceX, b.TakenOverBy)
			}
		})
	}
}

// TestTimelineLiveLease: a lease not yet expired is still held to now and
// granted (outlined) to its end, up to the instant it expires.
func TestTimelineLiveLease(t *testing.T) {
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	at := func(s float64) *time.Time { v := t0.Add(time.Duration(s * float64(time.Second))); return &v }
	x := func(s float64) float64 { return tlLabel + s/20*float64(tlWidth-tlLabel-10) }
	j := view.JobInfoView{
		JobView:  view.JobView{ID: 1, Attempt: 1, Lease: &view.LeaseView{Owner: "a", Until: *at(20), LeftSeconds: 10}},
		Attempts: []view.AttemptView{{Attempt: 1, Owner: "a", ClaimedAt: t0, HeartbeatAt: at(8), Outcome: "running"}},
	}
	b := newTimeline(j, *at(10)).Bars[0]
	if b.TailClass != "granted" || b.ExpiryX >= 0 || b.W < x(10)-x(0)-0.01 || b.W > x(10)-x(0)+0.01 || b.TailW < x(20)-x(10)-0.01 || b.TailW > x(20)-x(10)+0.01 {
		t.Errorf("live lease drawn %+v", b)
	}
}
