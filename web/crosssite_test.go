package web_test

import (
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/web"
)

// browser holds the dashboard cookies of one browser with their SameSite
// attributes, which net/http/cookiejar ignores, so that a test can send
// what a browser sends on a navigation from another site.
type browser struct {
	e       *env
	cookies map[string]*http.Cookie
}

// do sends a request for path with the cookies a browser sends: all of
// them from a page of the dashboard, only those that are not
// SameSite=Strict on a top-level GET from another site (a link in a mail
// or a chat). It stores the cookies the answer sets and returns the
// answer's status and body.
func (b *browser) do(method, path string, form url.Values, crossSite bool) (int, string) {
	b.e.t.Helper()
	req, _ := http.NewRequestWithContext(b.e.t.Context(), method, b.e.base+path, strings.NewReader(form.Encode()))
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	site := "same-origin"
	if crossSite {
		site = "cross-site"
	}
	req.Header.Set("Sec-Fetch-Site", site)
	req.Header.Set("Sec-Fetch-Mode", "navigate")
	for _, c := range b.cookies {
		if !crossSite || c.SameSite != http.SameSiteStrictMode {
			req.AddCookie(&http.Cookie{Name: c.Name, Value: c.Value})
		}
	}
	hc := &http.Client{Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := hc.Do(req)
	if err != nil {
		b.e.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	for _, c := range resp.Cookies() {
		b.cookies[c.Name] = c
	}
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// TestCookiesSameSiteLax: both dashboard cookies are SameSite=Lax, so that
// a logged-in operator who follows a link to the dashboard from another
// site is still logged in there, and the forms open in other tabs keep
// their CSRF token.
func TestCookiesSameSiteLax(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		e := newEnv(t, d, web.Options{Token: testToken})
		csrf, session := loginCookies(t, e)
		for _, c := range []*http.Cookie{csrf, session} {
			if c.SameSite != http.SameSiteLaxMode || !c.HttpOnly {
				t.Errorf("cookie %s: SameSite %v, HttpOnly %v; want Lax, HttpOnly", c.Name, c.SameSite, c.HttpOnly)
			}
		}

		b := &browser{e: e, cookies: map[string]*http.Cookie{csrf.Name: csrf, session.Name: session}}
		j := e.insert("q", "k", `{}`)
		path := "/jobs/" + strconv.FormatInt(j.ID, 10)
		status, body := b.do(http.MethodGet, path, nil, false)
		m := csrfRE.FindStringSubmatch(body)
		if status != http.StatusOK || m == nil {
			t.Fatalf("the job page = %d, without a CSRF token:\n%s", status, body)
		}
		token := m[1] // the form of the job page, left open in a tab

		// Another tab follows a link to the dashboard from another site.
		if status, _ := b.do(http.MethodGet, path, nil, true); status != http.StatusOK {
			t.Errorf("a link from another site = %d, want 200 (the operator is logged in)", status)
			if status == http.StatusSeeOther { // the browser follows the redirect, still cross-site
				b.do(http.MethodGet, "/login", nil, true)
			}
		}
		if b.cookies[csrf.Name].Value != csrf.Value {
			t.Errorf("a link from another site replaced the CSRF cookie")
		}
		// A request with no cookie at all (another client) keeps nothing
		// on the server that would void the browser's token.
		if status := e.raw(http.MethodGet, "/login", "", nil).StatusCode; status != http.StatusOK {
			t.Errorf("the login page = %d", status)
		}

		status, body = b.do(http.MethodPost, path+"/cancel", url.Values{"csrf": {token}}, false)
		if status != http.StatusSeeOther || e.state(j.ID) != leasehold.StateCancelled {
			t.Errorf("cancel from the tab opened before = %d, state %s; want 303, cancelled:\n%s", status, e.state(j.ID), body)
		}
	})
}
