package web

import (
	"math"
	"net"
	"net/http"
	"net/netip"
	"strconv"
	"sync"
	"time"

	"golang.org/x/time/rate"
)

// Failed credentials are throttled by client address: an address may
// fail FailedLoginBurst times at once, then once per FailedLoginEvery.
// Beyond that its attempts are answered 429 without being checked, right
// or wrong, so that guessing the token or the password from one address
// takes FailedLoginEvery a guess.
const (
	// FailedLoginBurst is how many failed attempts a client address may
	// make before it is throttled.
	FailedLoginBurst = 10
	// FailedLoginEvery is how often a throttled address may try again.
	FailedLoginEvery = 6 * time.Second
	// maxThrottled bounds the addresses remembered; past it, addresses
	// not yet remembered share one allowance.
	maxThrottled = 10000
)

// throttle counts the failed attempts of each client address.
type throttle struct {
	mu       sync.Mutex
	addrs    map[netip.Prefix]*rate.Limiter
	overflow *rate.Limiter
	now      func() time.Time
}

// newThrottle returns an empty throttle.
func newThrottle() *throttle {
	return &throttle{addrs: map[netip.Prefix]*rate.Limiter{}, overflow: newAllowance(), now: time.Now}
}

// newAllowance is one address's allowance of failed attempts.
func newAllowance() *rate.Limiter {
	return rate.NewLimiter(rate.Every(FailedLoginEvery), FailedLoginBurst)
}

// wait returns how long r's address must wait before its credentials are
// checked again: 0 unless it has used up its failed attempts.
func (t *throttle) wait(r *http.Request) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	lim, ok := t.addrs[clientOf(r)]
	if !ok {
		if len(t.addrs) < maxThrottled {
			return 0
		}
		lim = t.overflow
	}
	tokens := lim.TokensAt(t.now())
	if tokens >= 1 {
		return 0
	}
	return time.Duration((1 - tokens) * float64(FailedLoginEvery))
}

// failed counts a failed attempt of r's address.
func (t *throttle) failed(r *http.Request) {
	t.mu.Lock()
	defer t.mu.Unlock()
	key := clientOf(r)
	lim, ok := t.addrs[key]
	if !ok {
		t.prune()
		lim = t.overflow
		if len(t.addrs) < maxThrottled {
			lim = newAllowance()
			t.addrs[key] = lim
		}
	}
	lim.AllowN(t.now(), 1)
}

// prune forgets the addresses whose allowance is whole again, once the
// map is full.
func (t *throttle) prune() {
	if len(t.addrs) < maxThrottled {
		return
	}
	now := t.now()
	for k, lim := range t.addrs {
		if lim.TokensAt(now) >= FailedLoginBurst {
			delete(t.addrs, k)
		}
	}
}

// clientOf is the address r came from: the IPv4 address, or the /64 of
// an IPv6 one (a host is usually given a whole /64). Behind a proxy it is
// the proxy's address, so clients there share one allowance.
func clientOf(r *http.Request) netip.Prefix {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	a, err := netip.ParseAddr(host)
	if err != nil {
		return netip.Prefix{}
	}
	a = a.Unmap().WithZone("")
	bits := 32
	if a.Is6() {
		bits = 64
	}
	p, _ := a.Prefix(bits) // bits fit a's family
	return p
}

// throttled answers r 429 when its address must wait, and reports
// whether it did.
func (h *handler) throttled(w http.ResponseWriter, r *http.Request) bool {
	d := h.throttle.wait(r)
	if d <= 0 {
		return false
	}
	secs := int(math.Ceil(d.Seconds()))
	w.Header().Set("Retry-After", strconv.Itoa(secs))
	h.fail(w, r, http.StatusTooManyRequests,
		"too many failed attempts from this address: try again in "+strconv.Itoa(secs)+"s")
	return true
}
