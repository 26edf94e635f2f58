package chaos

import (
	"math/rand/v2"
	"sync"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/payments"
)

// refusal is a CompleteTx the fence refused: the lease (Job, Attempt) of
// Owner was no longer valid when its handler tried to complete it.
type refusal struct {
	Job     int64
	Attempt int
	Owner   string
}

// leaseKey names one lease: a job's attempt.
type leaseKey struct {
	job     int64
	attempt int
}

// facts gathers what workers report while they run.
type facts struct {
	mu       sync.Mutex
	refusals []refusal
	// renewals holds, per lease, the latest database time (Unix µs) a
	// heartbeat that renewed it was known to be sent after.
	renewals map[leaseKey]int64
}

func (f *facts) init() { f.renewals = map[leaseKey]int64{} }

func (f *facts) addRefusal(r refusal) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.refusals = append(f.refusals, r)
}

func (f *facts) addRenewal(atLeast int64, leases [][2]int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, l := range leases {
		k := leaseKey{job: l[0], attempt: int(l[1])}
		f.renewals[k] = max(f.renewals[k], atLeast)
	}
}

// snapshot returns copies of the reports.
func (f *facts) snapshot() ([]refusal, map[leaseKey]int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	renewals := make(map[leaseKey]int64, len(f.renewals))
	for k, v := range f.renewals {
		renewals[k] = v
	}
	return append([]refusal(nil), f.refusals...), renewals
}

// stallArm decides which charges the provider stalls: a random share,
// and, when armed for a freeze, the next charge of a worker that may be
// frozen, which it hands to the harness loop so that the freeze catches
// that worker in the middle of a charge.
type stallArm struct {
	mu       sync.Mutex
	prob     float64
	rng      *rand.Rand
	armed    bool
	eligible map[string]bool // owners that may be frozen
	picked   chan payments.ChargeRequest
}

func newStallArm(prob float64, seed uint64) *stallArm {
	return &stallArm{
		prob: prob, rng: rand.New(rand.NewPCG(seed^0x5eed, seed)),
		eligible: map[string]bool{}, picked: make(chan payments.ChargeRequest, 1),
	}
}

// stall is the provider's Stall hook. It must not block.
func (a *stallArm) stall(req payments.ChargeRequest) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.armed && a.eligible[req.Owner] {
		select {
		case a.picked <- req:
			a.armed = false
			return true
		default:
		}
	}
	return a.prob > 0 && a.rng.Float64() < a.prob
}

// setArmed arms (or disarms) the next freeze.
func (a *stallArm) setArmed(on bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.armed = on
}

func (a *stallArm) setEligible(owner string, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if ok {
		a.eligible[owner] = true
	} else {
		delete(a.eligible, owner)
	}
}
