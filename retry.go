package leasehold

import (
	"math/rand/v2"
	"time"
)

// RetryPolicy chooses how long a job that failed with a retryable error
// waits before it runs again. It is called only while the job has retry
// budget left. A negative delay counts as 0: the job runs again at once,
// behind the jobs already due.
type RetryPolicy interface {
	NextRetry(job *JobRow, err error) time.Duration
}

// ExponentialBackoff is the default RetryPolicy. For the n-th charged
// attempt (n = Attempt - FreeAttempts, from 1) the delay is
//
//	d = min(Max, Base * 2^(n-1))
//	delay = d * (1 - Jitter*r), r uniform in [0, 1)
//
// so retries spread out instead of returning in lockstep. Jitter is read
// within [0, 1] (a value outside counts as the nearer bound), and a delay
// is never negative.
type ExponentialBackoff struct {
	Base   time.Duration
	Max    time.Duration
	Jitter float64 // in [0, 1]
}

// DefaultRetryPolicy returns ExponentialBackoff{Base: 1s, Max: 1h,
// Jitter: 0.2}. With the default budget of 20 attempts a job that always
// fails waits 19 times (1 s, 2 s, 4 s, ... 2048 s, then 1 h seven times),
// between 6h30m36s and 8h8m15s in all (the jitter takes up to 20 % off
// each delay), plus its handlers' running time, before it fails for good.
func DefaultRetryPolicy() *ExponentialBackoff {
	return &ExponentialBackoff{Base: time.Second, Max: time.Hour, Jitter: 0.2}
}

// NextRetry implements RetryPolicy.
func (b *ExponentialBackoff) NextRetry(job *JobRow, _ error) time.Duration {
	n := job.ChargedAttempts()
	if n < 1 {
		n = 1
	}
	// Base * 2^(n-1) when it is at most Max, tested before the shift,
	// which would wrap past 2^63 (and could wrap to less than Max).
	d := b.Max
	if k := n - 1; b.Base > 0 && b.Base <= b.Max>>k {
		d = b.Base << k
	}
	if j := min(b.Jitter, 1); j > 0 {
		d = time.Duration(float64(d) * (1 - j*rand.Float64()))
	}
	return max(d, 0)
}
