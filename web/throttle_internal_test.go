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

// TestThrottleBounded: past maxThrottled addresses, those whose
// allowance is whole again are forgotten, and new ones share one
// allowance rather than grow the map.
func TestThrottleBounded(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	th := newThrottle()
	th.now = func() time.Time { return now }
	for i := range maxThrottled {
		th.failed(newReq(v4(i) + ":1"))
	}
	if len(th.addrs) != maxThrottled {
		t.Fatalf("%d addresses remembered, want %d", len(th.addrs), maxThrottled)
	}
	for range FailedLoginBurst {
		th.failed(newReq("198.51.100.1:1"))
	}
	if len(th.addrs) != maxThrottled {
		t.Errorf("a map already full grew to %d", len(th.addrs))
	}
	if d := th.wait(newReq("198.51.100.2:1")); d <= 0 {
		t.Errorf("a new address past the bound is not held to the shared allowance")
	}
	now = now.Add(FailedLoginBurst * FailedLoginEvery)
	th.failed(newReq("198.51.100.3:1"))
	if len(th.addrs) != 1 {
		t.Errorf("after every allowance recovered, %d addresses remembered, want only the new one", len(th.addrs))
	}
}
