package chaos

import (
	"sync/atomic"
	"time"
)

// The reclaim bound's slack is the time the statements of a reclaim take
// once it is due (the watcher's rescue, the producer's probe, the claim),
// and what they take depends on how loaded the machine is: on two cores
// shared with a race-instrumented orchestrator and a test suite beside
// them, a claim takes ten times what it takes on a quiet machine. So the workers
// time those statements, and the slack is the sum of their percentiles
// over the run, or reclaimSlack when that is more (harness.reclaimSlack).
//
// Only statements that succeeded are timed: one cut short by an outage
// says nothing of the machine's load, and the check allows outages apart
// (availability.go). A run makes thousands of probes and claims, and
// their 99th percentiles are the load's tail: with 95th percentiles a CI
// run had 3 of 293 reclaims over the bound, by 26 to 154 ms. But it makes
// only a hundred or so watcher passes, many of them a new process's
// first (a new connection), and their 99th percentile is the slowest few,
// which a freeze of the worker stretched to seconds: the watcher's is the
// 95th.

// latencyBounds are the upper bounds (µs) of a latency histogram's
// buckets, each at most 1.5 times the one before; the last bucket holds
// the rest.
var latencyBounds = [...]int64{1e3, 1500, 2e3, 3e3, 5e3, 7e3, 10e3, 15e3, 20e3, 30e3, 50e3, 70e3,
	100e3, 150e3, 200e3, 300e3, 500e3, 700e3, 1e6, 1500e3, 2e6, 3e6, 5e6}

// latency counts durations into the buckets of latencyBounds, one more for
// what lies above them, safely from many goroutines.
type latency [len(latencyBounds) + 1]atomic.Int64

// observe counts one duration.
func (l *latency) observe(d time.Duration) {
	us := d.Microseconds()
	for i, b := range latencyBounds {
		if us <= b {
			l[i].Add(1)
			return
		}
	}
	l[len(latencyBounds)].Add(1)
}

// snapshot returns the counts.
func (l *latency) snapshot() []int64 {
	out := make([]int64, len(l))
	for i := range l {
		out[i] = l[i].Load()
	}
	return out
}

// quantile returns the upper bound of the bucket that holds the q-th
// quantile of the summed counts (an overestimate by at most one bucket),
// 0 without any count, and the largest bound for the last bucket.
func quantile(q float64, counts ...[]int64) time.Duration {
	sum := make([]int64, len(latencyBounds)+1)
	var total int64
	for _, c := range counts {
		for i := range min(len(c), len(sum)) {
			sum[i] += c[i]
			total += c[i]
		}
	}
	if total == 0 {
		return 0
	}
	rank := int64(q * float64(total))
	var seen int64
	for i, n := range sum {
		seen += n
		if seen > rank {
			return time.Duration(latencyBounds[min(i, len(latencyBounds)-1)]) * time.Microsecond
		}
	}
	return time.Duration(latencyBounds[len(latencyBounds)-1]) * time.Microsecond
}

// slack is the reclaim bound's slack and the percentiles it sums.
type slack struct {
	Rescue, Probe, Claim time.Duration
}

// total returns the sum of the percentiles, or reclaimSlack when that is
// more.
func (s slack) total() time.Duration {
	return max(reclaimSlack, s.Rescue+s.Probe+s.Claim)
}

// reclaimSlack returns the slack of the reclaim bound from the workers'
// timings (slackOf).
func (h *harness) reclaimSlack() slack {
	var rescues, probes, claims [][]int64
	for _, c := range h.facts.allCalls() {
		rescues, probes, claims = append(rescues, c.RescueLatency), append(probes, c.ProbeLatency), append(claims, c.ClaimLatency)
	}
	return slackOf(rescues, probes, claims)
}

// slackOf returns the 95th percentile of the watcher passes and the 99th
// of the probes and the claims.
func slackOf(rescues, probes, claims [][]int64) slack {
	return slack{Rescue: quantile(0.95, rescues...), Probe: quantile(0.99, probes...), Claim: quantile(0.99, claims...)}
}
