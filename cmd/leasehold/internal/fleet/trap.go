package fleet

import (
	"math/rand/v2"
	"sync"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/payments"
)

// maxCatch bounds the charges one arming catches.
const maxCatch = 4

// Trap decides which charges the stand-in payment provider stalls (its
// Stall hook): a random share, and, when armed, the next charges of
// eligible workers, which it hands over on Caught so that a fault catches
// those workers in the middle of a charge. A Fleet keeps the eligible set:
// its running workers that are neither killed nor frozen.
type Trap struct {
	mu       sync.Mutex
	prob     float64
	rng      *rand.Rand
	skip     int             // charges to let pass before catching
	armed    int             // charges still to catch
	caughtBy map[string]bool // owners caught since the trap was armed
	eligible map[string]bool
	caught   chan payments.ChargeRequest
	onStall  func(payments.ChargeRequest, bool)
}

// NewTrap returns a disarmed trap that stalls a share prob of the
// charges (none when prob <= 0), drawn from seed. onStall, when set, is
// called for every charge stalled, caught or not; it must not block.
func NewTrap(prob float64, seed uint64, onStall func(req payments.ChargeRequest, caught bool)) *Trap {
	return &Trap{
		prob: prob, rng: rand.New(rand.NewPCG(seed^0x5eed, seed)), onStall: onStall,
		caughtBy: map[string]bool{}, eligible: map[string]bool{},
		caught: make(chan payments.ChargeRequest, maxCatch),
	}
}

// Stall is the provider's Stall hook. It does not block.
func (t *Trap) Stall(req payments.ChargeRequest) bool {
	caught, stall := t.decide(req)
	if stall && t.onStall != nil {
		t.onStall(req, caught)
	}
	return stall
}

func (t *Trap) decide(req payments.ChargeRequest) (caught, stall bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.armed > 0 && t.skip > 0 {
		t.skip--
	} else if t.armed > 0 && t.eligible[req.Owner] && !t.caughtBy[req.Owner] {
		select {
		case t.caught <- req:
			t.armed--
			t.caughtBy[req.Owner] = true
			return true, true
		default:
		}
	}
	return false, t.prob > 0 && t.rng.Float64() < t.prob
}

// Caught receives the charges the armed trap stalled.
func (t *Trap) Caught() <-chan payments.ChargeRequest { return t.caught }

// Arm makes the trap catch the next n charges (at most 4) of eligible
// workers, each of another worker.
func (t *Trap) Arm(n int) { t.ArmAfter(0, n) }

// ArmAfter is Arm once skip more charges have passed (the demo lets its
// workers warm up first).
func (t *Trap) ArmAfter(skip, n int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.skip, t.armed = skip, min(max(n, 0), maxCatch)
	clear(t.caughtBy)
}

// Disarm stops catching.
func (t *Trap) Disarm() { t.Arm(0) }

// setEligible says whether the worker owner may be caught.
func (t *Trap) setEligible(owner string, ok bool) {
	if t == nil {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if ok {
		t.eligible[owner] = true
	} else {
		delete(t.eligible, owner)
	}
}
