package web

import (
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestValidSession: a session cookie is good from its issue time (or a
// minute before, for clocks that differ) until SessionLifetime after it,
// and only with the HMAC of its own time under the current token.
func TestValidSession(t *testing.T) {
	h := &handler{opts: Options{Token: "tok", SessionLifetime: time.Hour}}
	issued := time.Unix(1_800_000_000, 0)
	v := h.sessionValue(issued)
	for _, c := range []struct {
		at   time.Duration
		want bool
	}{{-sessionSkew - time.Second, false}, {-sessionSkew, true}, {0, true}, {time.Hour - time.Second, true},
		{time.Hour, false}, {48 * time.Hour, false}} {
		if got := h.validSession(v, issued.Add(c.at)); got != c.want {
			t.Errorf("a cookie checked %v after its issue time: valid %v, want %v", c.at, got, c.want)
		}
	}
	secs, sum, _ := strings.Cut(v, ".")
	n, _ := strconv.ParseInt(secs, 10, 64)
	later := strconv.FormatInt(n+1, 10) + "." + sum
	rotated := &handler{opts: Options{Token: "tok2", SessionLifetime: time.Hour}}
	none := &handler{opts: Options{SessionLifetime: time.Hour}}
	for name, ok := range map[string]bool{
		"its time changed":            h.validSession(later, issued),
		"another token":               rotated.validSession(v, issued),
		"no token":                    none.validSession(none.sessionValue(issued), issued),
		"no dot":                      h.validSession(secs+sum, issued),
		"a time that is not a number": h.validSession("x"+v, issued),
		"no HMAC":                     h.validSession(secs+".", issued),
	} {
		if ok {
			t.Errorf("a session cookie with %s is valid", name)
		}
	}
}
