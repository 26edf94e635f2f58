package driver

import (
	"math"
	"time"
)

// Micros returns us microseconds as a time.Duration, saturated at the
// Duration's bounds: math.MaxInt64 (about 292 years) for larger values and
// math.MinInt64 for smaller ones. The drivers read ages, such as
// QueueStats.OldestPending, in microseconds, and a job may be due since
// year 1, over 2,000 years ago: multiplying by time.Microsecond would wrap
// such an age into a few centuries, or below zero.
func Micros(us int64) time.Duration {
	const per = int64(time.Microsecond)
	switch {
	case us > math.MaxInt64/per:
		return math.MaxInt64
	case us < math.MinInt64/per:
		return math.MinInt64
	}
	return time.Duration(us) * time.Microsecond
}
