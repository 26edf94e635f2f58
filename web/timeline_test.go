package web

import (
	"testing"
	"time"

	"github.com/leasehold/leasehold/view"
)

// TestTimelineTakeover: an expired lease is held up to its last
// heartbeat, unrenewed (hatched) to its end, fenced there and joined to
// the next claim; the running lease shows the time it is granted for.
func TestTimelineTakeover(t *testing.T) {
	t0 := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	at := func(s float64) *time.Time { v := t0.Add(time.Duration(s * float64(time.Second))); return &v }
	j := view.JobInfoView{
		JobView: view.JobView{ID: 1, Attempt: 2, Lease: &view.LeaseView{Owner: "b", Until: *at(100)}},
		Attempts: []view.AttemptView{
			{Attempt: 1, Owner: "a", ClaimedAt: t0, HeartbeatAt: at(10), EndedAt: at(40), Outcome: "lease_expired"},
			{Attempt: 2, Owner: "b", ClaimedAt: *at(40), HeartbeatAt: at(60), Outcome: "running"},
		},
	}
	tl := newTimeline(j, *at(80))
	if tl == nil || len(tl.Bars) != 2 || len(tl.Ticks) != 5 {
		t.Fatalf("timeline = %+v", tl)
	}
	x := func(s float64) float64 { return tlLabel + s/100*float64(tlWidth-tlLabel-10) }
	near := func(what string, got, want float64) {
		if got < want-0.01 || got > want+0.01 {
			t.Errorf("%s = %.2f, want %.2f", what, got, want)
		}
	}
	a, b := tl.Bars[0], tl.Bars[1]
	near("a.X", a.X, x(0))
	near("a.W (held to the heartbeat)", a.W, x(10)-x(0))
	near("a.TailX", a.TailX, x(10))
	near("a.TailW (unrenewed to the end)", a.TailW, x(40)-x(10))
	near("a.FenceX", a.FenceX, x(40))
	near("a.HeartbeatX", a.HeartbeatX, x(10))
	near("a's connector end", a.NextX, b.X)
	near("b.W (held to now)", b.W, x(80)-x(40))
	near("b.TailW (granted to the lease's end)", b.TailW, x(100)-x(80))
	if a.TailClass != "unrenewed" || a.TakenOverBy != "b" || b.TailClass != "granted" || b.FenceX >= 0 || b.TakenOverBy != "" {
		t.Errorf("a = %+v\nb = %+v", a, b)
	}
	if tl.Ticks[4].Label != "+1m40s" || tl.Ticks[4].Anchor != "end" {
		t.Errorf("last tick %+v", tl.Ticks[4])
	}
	if newTimeline(view.JobInfoView{}, t0) != nil {
		t.Errorf("a job never claimed has a timeline")
	}
}
