package web

import (
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"
)

// newReq is a request from addr (host:port).
func newReq(addr string) *http.Request {
	r := httptest.NewRequest(http.MethodGet, "/", nil)
	r.RemoteAddr = addr
	return r
}

// v4 is the i-th address of 10.0.0.0/8.
func v4(i int) string {
	return "10." + strconv.Itoa(i>>16&255) + "." + strconv.Itoa(i>>8&255) + "." + strconv.Itoa(i&255)
}

// TestThrottleRecovers: an address is let through FailedLoginBurst
// failures, then waits FailedLoginEvery for each further attempt; other
// addresses (and another /64 of IPv6) keep their own allowance, while one
// /64 shares its.
func TestThrottleRecovers(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	th := newThrottle()
	th.now = func() time.Time { return now }
	from := newReq
	a := from("203.0.113.7:4000")
	for i := range FailedLoginBurst {
		if d := th.wait(a); d != 0 {
			t.Fatalf("after %d failures: wait %v, want none", i, d)
		}
		th.failed(a)
	}
	if d := th.wait(a); d <= 0 || d > FailedLoginEvery {
		t.Fatalf("after %d failures: wait %v, want (0, %v]", FailedLoginBurst, d, FailedLoginEvery)
	}
	if d := th.wait(from("203.0.113.7:5000")); d <= 0 {
		t.Errorf("the same address from another port is not throttled")
	}
	if d := th.wait(from("203.0.113.8:4000")); d != 0 {
		t.Errorf("another address waits %v", d)
	}
	now = now.Add(FailedLoginEvery)
	if d := th.wait(a); d != 0 {
		t.Errorf("%v later: wait %v, want none", FailedLoginEvery, d)
	}
	th.failed(a)
	if d := th.wait(a); d <= 0 {
		t.Errorf("a failure after the wait is not throttled again")
	}

	v6 := from("[2001:db8:1:2::1]:443")
	for range FailedLoginBurst {
		th.failed(v6)
	}
	if d := th.wait(from("[2001:db8:1:2:ffff::9]:443")); d <= 0 {
		t.Errorf("another address of the same IPv6 /64 is not throttled")
	}
	if d := th.wait(from("[2001:db8:1:3::1]:443")); d != 0 {
		t.Errorf("an address of another IPv6 /64 waits %v", d)
	}
}

// TestThrottleBounded: the throttle remembers at most maxThrottled
// addresses; failures from more addresses than that forget the one whose
// last failure is the oldest, and never throttle an address that has not
// failed: an attacker failing from many addresses cannot lock out an
// operator's.
func TestThrottleBounded(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	th := newThrottle()
	th.now = func() time.Time { return now }
	guesser := newReq("198.51.100.1:1")
	for range FailedLoginBurst {
		th.failed(guesser)
	}
	for i := range maxThrottled + 10 {
		if i == maxThrottled/2 {
			if d := th.wait(guesser); d <= 0 {
				t.Fatalf("an address that used up its allowance is no longer throttled after %d others failed", i)
			}
		}
		th.failed(newReq(v4(i) + ":1"))
	}
	if len(th.addrs) != maxThrottled || th.order.Len() != maxThrottled {
		t.Errorf("%d addresses remembered (list %d), want %d", len(th.addrs), th.order.Len(), maxThrottled)
	}
	for _, fresh := range []string{"192.0.2.1:1", "[2001:db8::1]:1"} {
		if d := th.wait(newReq(fresh)); d != 0 {
			t.Errorf("after failures from %d addresses, a fresh address %s waits %v", maxThrottled+10, fresh, d)
		}
	}
	if _, ok := th.addrs[clientOf(newReq(v4(0)+":1"))]; ok {
		t.Errorf("the address whose last failure is the oldest is still remembered")
	}
	last := newReq(v4(maxThrottled+9) + ":1")
	for range FailedLoginBurst - 1 {
		th.failed(last)
	}
	if d := th.wait(last); d <= 0 {
		t.Errorf("a remembered address that used up its allowance is not throttled")
	}
}
