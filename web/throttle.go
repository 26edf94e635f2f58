package web

import (
	"container/list"
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
	// maxThrottled bounds the addresses remembered; past it, the one
	// whose last failure is the oldest is forgotten to make room, so that
	// other addresses' failures never use up a new address's allowance.
	maxThrottled = 10000
)

// throttle counts the failed attempts of each client address, at most
// maxThrottled of them: the list keeps them by their last failure, the
// most recent first.
type throttle struct {
	mu    sync.Mutex
	addrs map[netip.Prefix]*list.Element // of *failures
	order *list.List
	now   func() time.Time
}

// failures is the allowance of one address.
type failures struct {
	key netip.Prefix
	lim *rate.Limiter
}

// newThrottle returns an empty throttle.
func newThrottle() *throttle {
	return &throttle{addrs: map[netip.Prefix]*list.Element{}, order: list.New(), now: time.Now}
}

// newAllowance is one address's allowance of failed attempts.
func newAllowance() *rate.Limiter {
	return rate.NewLimiter(rate.Every(FailedLoginEvery), FailedLoginBurst)
}

// wait returns how long r's address must wait before its credentials are
// checked again: 0 unless it has used up its failed attempts. An address
// not remembered has its whole allowance.
func (t *throttle) wait(r *http.Request) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	e, ok := t.addrs[clientOf(r)]
	if !ok {
		return 0
	}
	tokens := e.Value.(*failures).lim.TokensAt(t.now())
	if tokens >= 1 {
		return 0
	}
	return time.Duration((1 - tokens) * float64(FailedLoginEvery))
}

// failed counts a failed attempt of r's address. A new address, when
// maxThrottled are remembered, takes the place of the one whose last
// failure is the oldest: that one has had the longest to recover, and an
// attacker failing from many addresses forgets its own first ones rather
// than throttling anyone else.
func (t *throttle) failed(r *http.Request) {
	t.mu.Lock()
	defer t.mu.Unlock()
	key := clientOf(r)
	e, ok := t.addrs[key]
	switch {
	case ok:
		t.order.MoveToFront(e)
	default:
		if t.order.Len() >= maxThrottled {
			oldest := t.order.Back()
			delete(t.addrs, oldest.Value.(*failures).key)
			t.order.Remove(oldest)
		}
		e = t.order.PushFront(&failures{key: key, lim: newAllowance()})
		t.addrs[key] = e
	}
	e.Value.(*failures).lim.AllowN(t.now(), 1)
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
