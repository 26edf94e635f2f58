package chaos

import (
	"math"
	"testing"
)

// TestUncovered checks the time of a window that no span covers, with
// spans that overlap, touch, lie outside it or cover all of it.
func TestUncovered(t *testing.T) {
	w := span{100, 200}
	for _, c := range []struct {
		spans []span
		want  int64
	}{
		{nil, 100},
		{[]span{{0, 300}}, 0},
		{[]span{{0, 100}, {200, 300}}, 100},
		{[]span{{120, 150}, {140, 160}}, 60},
		{[]span{{150, 170}, {110, 130}}, 60},
		{[]span{{90, 120}, {120, 210}}, 0},
		{[]span{{190, 250}, {0, 110}}, 80},
	} {
		if got := uncovered(w, c.spans); got != c.want {
			t.Errorf("uncovered(%v, %v) = %d, want %d", w, c.spans, got, c.want)
		}
	}
	if got := uncovered(span{200, 100}, nil); got != 0 {
		t.Errorf("uncovered of an empty window = %d, want 0", got)
	}
}

// TestMinus checks the parts of a span left by cuts inside it, across its
// ends and outside it.
func TestMinus(t *testing.T) {
	got := minus(span{0, 100}, []span{{10, 20}, {90, 150}, {-5, 2}, {200, 300}, {15, 30}})
	want := []span{{2, 10}, {30, 90}}
	if len(got) != len(want) {
		t.Fatalf("minus = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("minus = %v, want %v", got, want)
		}
	}
	if got := minus(span{0, 100}, []span{{0, 100}}); len(got) != 0 {
		t.Errorf("minus of a span cut whole = %v, want nothing", got)
	}
}

// TestAllowedDelay checks the reclaim bound: a claim later than the bound
// while a worker could claim is over it, whatever happened before the
// lease ran out; the time after that in which no worker could claim (its
// only worker frozen, then killed and not started again) is allowed on
// top.
func TestAllowedDelay(t *testing.T) {
	const bound, ttl, death = 2_900, 2_000, 10_000
	always := availableSpans([]workerLife{{life: span{0, math.MaxInt64}}}, nil)
	if got := allowedDelay(bound, ttl, death, death+bound+1, always); got != bound {
		t.Errorf("with a worker able to claim throughout: allowed %d, want the bound %d", got, bound)
	}
	// Frozen from 11,000 to 12,500 (before the lease ran out, at 12,000,
	// and after), killed at 13,000, its replacement ready at 13,400;
	// a restart from 5,000 to 9,000 with the workers back by 9,200.
	lives := []workerLife{
		{life: span{0, 13_000}, cuts: []span{{11_000, 12_500}}},
		{life: span{13_400, math.MaxInt64}},
	}
	avail := availableSpans(lives, []span{{5_000, 9_200}})
	if got, want := allowedDelay(bound, ttl, death, 14_000, avail), int64(bound+500+400); got != want {
		t.Errorf("allowed %d, want %d (the bound, 500 frozen after the lease ran out, 400 with no worker)", got, want)
	}
}

// TestStartedAfter: a lease the database stamped after its worker's death
// (a claim or renewal the server started late) is allowed that span; one
// stamped before the death is allowed nothing.
func TestStartedAfter(t *testing.T) {
	for _, c := range []struct {
		claimed, heartbeat, death, want int64
	}{
		{claimed: 100, death: 500, want: 0},
		{claimed: 100, heartbeat: 400, death: 500, want: 0},
		{claimed: 765, death: 500, want: 265},
		{claimed: 100, heartbeat: 600, death: 500, want: 100},
		{claimed: 700, heartbeat: 650, death: 500, want: 200},
	} {
		got := startedAfter(attemptRow{claimed: c.claimed, heartbeat: c.heartbeat}, c.death)
		if got != c.want {
			t.Errorf("startedAfter(claimed %d, heartbeat %d, death %d) = %d, want %d", c.claimed, c.heartbeat, c.death, got, c.want)
		}
	}
}
