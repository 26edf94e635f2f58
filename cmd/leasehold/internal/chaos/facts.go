package chaos

import (
	"sync"
	"time"
)

// refusal is a CompleteTx the fence refused: the lease (Job, Attempt) of
// Owner was no longer valid when its handler tried to complete it.
type refusal struct {
	Job     int64
	Attempt int
	Owner   string
}

// timedRefusal is a refusal and when the orchestrator heard of it.
type timedRefusal struct {
	refusal
	at time.Time
}

// leaseKey names one lease: a job's attempt.
type leaseKey struct {
	job     int64
	attempt int
}

// facts gathers what workers report while they run.
type facts struct {
	mu       sync.Mutex
	refusals []timedRefusal
	// renewals holds, per lease, the latest database time (Unix µs) a
	// heartbeat that renewed it was known to be sent after.
	renewals map[leaseKey]int64
	// byOwner holds each worker's latest database call counters.
	byOwner map[string]CallStats
	// ready holds when (orchestrator's clock) each worker first reported:
	// its client had started.
	ready map[string]time.Time
}

func (f *facts) init() {
	f.renewals = map[leaseKey]int64{}
	f.byOwner = map[string]CallStats{}
	f.ready = map[string]time.Time{}
}

// setCalls records the call counters of a report of the worker owner.
func (f *facts) setCalls(owner string, c CallStats) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.byOwner[owner] = c
	if _, ok := f.ready[owner]; !ok {
		f.ready[owner] = time.Now()
	}
}

// allCalls returns every worker's latest call counters.
func (f *facts) allCalls() []CallStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]CallStats, 0, len(f.byOwner))
	for _, c := range f.byOwner {
		out = append(out, c)
	}
	return out
}

// readyAt returns when the worker owner first reported, if it did.
func (f *facts) readyAt(owner string) (time.Time, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	t, ok := f.ready[owner]
	return t, ok
}

// calls returns the latest call counters of the worker owner.
func (f *facts) calls(owner string) CallStats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.byOwner[owner]
}

func (f *facts) addRefusal(r refusal) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refusals = append(f.refusals, timedRefusal{refusal: r, at: time.Now()})
}

func (f *facts) addRenewal(atLeast int64, leases [][2]int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, l := range leases {
		k := leaseKey{job: l[0], attempt: int(l[1])}
		f.renewals[k] = max(f.renewals[k], atLeast)
	}
}

// snapshot returns copies of the reports: the refusals (with when each
// was heard of) and the renewals.
func (f *facts) snapshot() ([]timedRefusal, map[leaseKey]int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	renewals := make(map[leaseKey]int64, len(f.renewals))
	for k, v := range f.renewals {
		renewals[k] = v
	}
	return append([]timedRefusal(nil), f.refusals...), renewals
}
