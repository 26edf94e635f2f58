package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/web"
)

// TestLoginReturnsToRequestedPage: a page asked for without credentials
// sends the browser to the login page, which after the login sends it back
// to that page (a link from an alert), with and without a prefix; a next
// page that is not a path of the dashboard (another site, a protocol-relative
// or backslashed URL, a path out of the prefix) lands on the overview.
func TestLoginReturnsToRequestedPage(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		for _, prefix := range []string{"", "/ops"} {
			e := newEnv(t, d, web.Options{Token: testToken, Prefix: prefix})
			const page = "/jobs/5?tab=attempts"
			resp := e.raw(http.MethodGet, page, "", nil)
			loc := resp.Header.Get("Location")
			if resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, prefix+"/login?") {
				t.Fatalf("prefix %q: GET %s = %d, Location %q; want a redirect to the login page", prefix, page, resp.StatusCode, loc)
			}
			u, err := url.Parse(loc)
			if err != nil {
				t.Fatalf("Location %q: %v", loc, err)
			}
			next := u.Query().Get("next")
			if next != page {
				t.Errorf("prefix %q: the login page's next is %q, want %q", prefix, next, page)
			}
			status, body := e.get(strings.TrimPrefix(loc, prefix))
			if status != http.StatusOK || !strings.Contains(body, `name="next" value="/jobs/5?tab=attempts"`) {
				t.Fatalf("prefix %q: the login page (%d) carries no next field:\n%s", prefix, status, body)
			}
			if got := loginTo(e, formOf(body).Get("next")); got != prefix+page {
				t.Errorf("prefix %q: after the login, Location %q, want %q", prefix, got, prefix+page)
			}
			if got := loginTo(e, ""); got != prefix+"/" {
				t.Errorf("prefix %q: a login with no next goes to %q, want the overview", prefix, got)
			}
			for _, evil := range []string{"//evil.example/x", "https://evil.example/", "/\\evil.example", "\\/evil.example",
				"/../evil", "/%2e%2e/evil", "javascript:alert(1)", "evil.example", "/jobs#x"} {
				if got := loginTo(e, evil); got != prefix+"/" {
					t.Errorf("prefix %q: a login with next %q goes to %q, want the overview %q", prefix, evil, got, prefix+"/")
				}
				if status, body := e.get("/login?next=" + url.QueryEscape(evil)); status != http.StatusOK ||
					strings.Contains(body, `name="next"`) {
					t.Errorf("prefix %q: the login page for next %q (%d) carries it on", prefix, evil, status)
				}
			}
		}
	})
}

// loginTo logs e's browser in with the token and next, and returns where
// the login redirects.
func loginTo(e *env, next string) string {
	e.t.Helper()
	form := url.Values{"csrf": {e.csrf("/login")}, "token": {testToken}}
	if next != "" {
		form.Set("next", next)
	}
	req, _ := http.NewRequestWithContext(e.t.Context(), http.MethodPost, e.base+"/login", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := e.http.Do(req)
	if err != nil {
		e.t.Fatalf("POST /login: %v", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		e.t.Fatalf("POST /login with next %q = %d", next, resp.StatusCode)
	}
	return resp.Header.Get("Location")
}
