package chaos

import (
	"testing"
	"time"
)

// TestQuantile: the quantile of summed histograms is the upper bound of
// the bucket that holds it; nothing counted gives 0, and a duration past
// every bound the largest bound.
func TestQuantile(t *testing.T) {
	var a, b latency
	for range 90 {
		a.observe(800 * time.Microsecond) // first bucket, 1 ms
	}
	for range 10 {
		b.observe(120 * time.Millisecond) // the 150 ms bucket
	}
	ca, cb := a.snapshot(), b.snapshot()
	for _, c := range []struct {
		q    float64
		want time.Duration
	}{{0.5, time.Millisecond}, {0.89, time.Millisecond}, {0.9, 150 * time.Millisecond}, {0.99, 150 * time.Millisecond}} {
		if got := quantile(c.q, ca, cb); got != c.want {
			t.Errorf("quantile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	if got := quantile(0.95); got != 0 {
		t.Errorf("quantile of nothing = %v, want 0", got)
	}
	var far latency
	far.observe(time.Minute)
	if got := quantile(0.5, far.snapshot()); got != 5*time.Second {
		t.Errorf("quantile past every bound = %v, want the largest bound", got)
	}
}

// TestSlackOf: the reclaim bound's slack is the sum of the three
// statements' percentiles (95th of the watcher passes, 99th of the
// probes and claims), and never less than reclaimSlack.
func TestSlackOf(t *testing.T) {
	hist := func(d time.Duration) [][]int64 {
		var l latency
		for range 100 {
			l.observe(d)
		}
		return [][]int64{l.snapshot()}
	}
	if got := slackOf(hist(time.Millisecond), hist(time.Millisecond), hist(2*time.Millisecond)).total(); got != reclaimSlack {
		t.Errorf("slack on a quiet machine = %v, want reclaimSlack %v", got, reclaimSlack)
	}
	if got, want := slackOf(hist(180*time.Millisecond), hist(90*time.Millisecond), hist(400*time.Millisecond)).total(), 800*time.Millisecond; got != want {
		t.Errorf("slack under load = %v, want %v (200 + 100 + 500 ms)", got, want)
	}
	// 3 slow in 100: past the watcher's 95th percentile, within the 99th
	// of the probes and claims.
	tail := func() [][]int64 {
		var l latency
		for i := range 100 {
			d := time.Millisecond
			if i < 3 {
				d = 2 * time.Second
			}
			l.observe(d)
		}
		return [][]int64{l.snapshot()}
	}
	if got, want := slackOf(tail(), tail(), tail()), (slack{Rescue: time.Millisecond, Probe: 2 * time.Second, Claim: 2 * time.Second}); got != want {
		t.Errorf("slack of a tail of 3%% = %+v, want %+v", got, want)
	}
	if got := slackOf(nil, nil, nil).total(); got != reclaimSlack {
		t.Errorf("slack with nothing measured = %v, want reclaimSlack", got)
	}
}
