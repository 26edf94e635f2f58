package driver

import (
	"math"
	"testing"
	"time"
)

func TestMicros(t *testing.T) {
	limit := int64(math.MaxInt64 / int64(time.Microsecond)) // the last microsecond count that fits
	year1 := time.Date(1, 1, 2, 0, 0, 0, 0, time.UTC)
	cases := []struct {
		us   int64
		want time.Duration
	}{
		{0, 0},
		{1, time.Microsecond},
		{-1, -time.Microsecond},
		{limit, time.Duration(limit) * time.Microsecond},
		{limit + 1, math.MaxInt64},
		{-limit, -time.Duration(limit) * time.Microsecond},
		{-limit - 1, math.MinInt64},
		{math.MaxInt64, math.MaxInt64},
		{math.MinInt64, math.MinInt64},
		// The age, in 2026, of a job due since 0001-01-02.
		{time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro() - year1.UnixMicro(), math.MaxInt64},
	}
	for _, tc := range cases {
		if got := Micros(tc.us); got != tc.want {
			t.Errorf("Micros(%d) = %v, want %v", tc.us, got, tc.want)
		}
	}
}
