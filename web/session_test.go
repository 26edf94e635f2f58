package web_test

import (
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/web"
)

// TestSessionCookie: the login's session cookie lasts SessionLifetime (the
// browser's Max-Age; 12 hours by default), names the time it was issued,
// and is refused once that time is changed (its HMAC no longer matches)
// or under another token.
func TestSessionCookie(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		for _, c := range []struct {
			lifetime time.Duration
			maxAge   int
		}{{0, 12 * 3600}, {time.Hour, 3600}} {
			e := newEnv(t, d, web.Options{Token: testToken, SessionLifetime: c.lifetime})
			before := time.Now().Unix()
			_, session := loginCookies(t, e)
			after := time.Now().Unix()
			if session.MaxAge != c.maxAge {
				t.Errorf("SessionLifetime %v: cookie Max-Age %d, want %d", c.lifetime, session.MaxAge, c.maxAge)
			}
			issued, sum, ok := strings.Cut(session.Value, ".")
			secs, err := strconv.ParseInt(issued, 10, 64)
			if !ok || err != nil || secs < before || secs > after || len(sum) != 64 {
				t.Fatalf("session cookie %q: want the issue time (%d-%d), a dot and a hex HMAC", session.Value, before, after)
			}
			if status := pageStatus(e, session.Value); status != http.StatusOK {
				t.Fatalf("a page with the login's cookie = %d, want 200", status)
			}
			for _, forged := range []string{strconv.FormatInt(secs-1, 10) + "." + sum, // another issue time
				sum, "", "." + sum, issued + "."} {
				if status := pageStatus(e, forged); status != http.StatusSeeOther {
					t.Errorf("a page with session cookie %q = %d, want a redirect to the login", forged, status)
				}
			}
			other := newEnv(t, d, web.Options{Token: testToken + "-rotated"})
			if status := pageStatus(other, session.Value); status != http.StatusSeeOther {
				t.Errorf("the cookie under another token = %d, want a redirect to the login", status)
			}
		}
	})
}

// loginCookies logs in to e's dashboard with testToken, with no cookie
// jar, and returns the CSRF cookie of the login page and the session
// cookie the login set.
func loginCookies(t *testing.T, e *env) (csrf, session *http.Cookie) {
	t.Helper()
	resp := e.raw(http.MethodGet, "/login", "", nil)
	csrf = cookieOf(t, resp, "leasehold_csrf")
	b, _ := io.ReadAll(resp.Body)
	m := csrfRE.FindSubmatch(b)
	if m == nil {
		t.Fatalf("no CSRF token on the login page")
	}
	resp = e.raw(http.MethodPost, "/login", url.Values{"csrf": {string(m[1])}, "token": {testToken}}.Encode(), csrf)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login = %d", resp.StatusCode)
	}
	return csrf, cookieOf(t, resp, "leasehold_session")
}

// pageStatus returns the status of the overview asked for with session
// cookie value.
func pageStatus(e *env, value string) int {
	return e.raw(http.MethodGet, "/", "", &http.Cookie{Name: "leasehold_session", Value: value}).StatusCode
}
