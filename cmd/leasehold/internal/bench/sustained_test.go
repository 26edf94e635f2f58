package bench

import (
	"math"
	"runtime"
	"runtime/debug"
	"testing"
	"time"
)

func TestParseHold(t *testing.T) {
	for _, c := range []struct {
		in      string
		at, dur time.Duration
		bad     bool
	}{
		{in: ""}, {in: "0"},
		{in: "5m:5m", at: 5 * time.Minute, dur: 5 * time.Minute},
		{in: "0s:90s", dur: 90 * time.Second},
		{in: "5m", bad: true}, {in: "x:5m", bad: true}, {in: "5m:y", bad: true},
		{in: "-1m:5m", bad: true}, {in: "1m:0s", bad: true},
		{in: "1d:2h", at: 24 * time.Hour, dur: 2 * time.Hour},
	} {
		at, dur, err := ParseHold(c.in)
		if (err != nil) != c.bad || at != c.at || dur != c.dur {
			t.Errorf("ParseHold(%q) = %v, %v, %v; want %v, %v, error %v", c.in, at, dur, err, c.at, c.dur, c.bad)
		}
	}
}

// TestHistQuantiles checks that the histogram's quantiles are within a
// bucket (2%) of the exact ones of a known distribution.
func TestHistQuantiles(t *testing.T) {
	h := make([]int64, histBuckets)
	for i := 1; i <= 1000; i++ { // 1 to 1000 ms, uniformly
		h[bucket(float64(i))]++
	}
	q := histQuantiles(h)
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"p50", q.P50, 500}, {"p95", q.P95, 950}, {"p99", q.P99, 990}, {"max", q.Max, 1000}} {
		if math.Abs(c.got-c.want)/c.want > histGrowth-1 {
			t.Errorf("%s = %.1f, want %.0f within 2%%", c.name, c.got, c.want)
		}
	}
	if got := histQuantiles(make([]int64, histBuckets)); got != (Quantiles{}) {
		t.Errorf("empty histogram: %+v, want zeros", got)
	}
	if bucket(0) != 0 || bucket(1e9) != histBuckets-1 {
		t.Errorf("bucket clamps: bucket(0) = %d, bucket(1e9) = %d", bucket(0), bucket(1e9))
	}
}

// garbage keeps the compiler from dropping the allocations of
// TestMemoryIsLiveHeap.
var garbage []byte

// TestMemoryIsLiveHeap allocates 64 MiB of garbage with the collector
// off: the heap figure of a sustained window must not grow with it, since
// it is the live heap, not what the collector has yet to sweep.
func TestMemoryIsLiveHeap(t *testing.T) {
	runtime.GC()
	before, _ := memory()
	defer debug.SetGCPercent(debug.SetGCPercent(-1))
	for range 64 {
		garbage = make([]byte, 1<<20)
	}
	after, _ := memory()
	if grew := after - before; grew > 8 {
		t.Errorf("heap figure grew by %.1f MiB with 64 MiB of garbage: want the live heap", grew)
	}
	if before <= 0 {
		t.Errorf("live heap %.2f MiB after a collection: want it measured", before)
	}
}
