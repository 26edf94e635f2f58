package web_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/web"
)

func regexp0(s string) *regexp.Regexp { return regexp.MustCompile(s) }

// TestUnauthenticated: with a token configured, pages redirect to the
// login page and a change without credentials is refused; without any
// authentication configured, every change is refused.
func TestUnauthenticated(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		e := newEnv(t, d, web.Options{Token: testToken})
		j := e.insert("q", "k", `{}`)
		path := "/jobs/" + strconv.FormatInt(j.ID, 10)
		if status, _ := e.get(path); status != http.StatusSeeOther {
			t.Errorf("a page without the token = %d, want a redirect to the login", status)
		}
		csrf := e.csrf("/login") // a valid CSRF pair does not authenticate
		if status, _ := e.post(path+"/cancel", url.Values{"csrf": {csrf}}); status != http.StatusUnauthorized {
			t.Errorf("cancel without the token = %d, want 401", status)
		}
		if status, _ := e.post(path+"/cancel", nil, "Authorization", "Bearer wrong"); status != http.StatusUnauthorized {
			t.Errorf("cancel with a wrong token = %d, want 401", status)
		}
		if status, _ := e.post("/login", url.Values{"csrf": {csrf}, "token": {"wrong"}}); status != http.StatusUnauthorized {
			t.Errorf("login with a wrong token = %d, want 401", status)
		}
		if e.state(j.ID) != leasehold.StatePending {
			t.Fatalf("an unauthenticated request changed the job")
		}

		b := newEnv(t, d, web.Options{BasicUser: "ops", BasicPassword: testPassword})
		resp, err := http.Get(b.base + "/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized || !strings.HasPrefix(resp.Header.Get("WWW-Authenticate"), "Basic") {
			t.Errorf("basic auth: a page without credentials = %d %q", resp.StatusCode, resp.Header.Get("WWW-Authenticate"))
		}
		b.http.Transport = basicAuth{"ops", "nope"}
		if status, _ := b.post(path+"/cancel", nil); status != http.StatusUnauthorized {
			t.Errorf("cancel with a wrong password = %d, want 401", status)
		}

		open := newEnv(t, d, web.Options{})
		body := open.mustGet(path)
		if strings.Contains(body, `id="cancel"`) {
			t.Errorf("a dashboard without authentication shows the cancel button")
		}
		if status, body := open.post(path+"/cancel", nil); status != http.StatusForbidden || !strings.Contains(body, "changes need authentication") {
			t.Errorf("cancel on a dashboard without authentication = %d, want 403:\n%s", status, body)
		}
		if e.state(j.ID) != leasehold.StatePending {
			t.Fatalf("a refused request changed the job")
		}
	})
}

// TestForgedRequests: an authenticated browser's change is refused
// without its CSRF token, with another's, or from another site.
func TestForgedRequests(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		e := newEnv(t, d, web.Options{Token: testToken})
		e.login()
		j := e.insert("q", "k", `{}`)
		path := "/jobs/" + strconv.FormatInt(j.ID, 10)
		good := e.csrf(path)
		other := newEnv(t, d, web.Options{Token: testToken}).csrf("/login")
		cases := []struct {
			name string
			form url.Values
			hdr  []string
		}{
			{"no CSRF token", url.Values{}, nil},
			{"a wrong CSRF token", url.Values{"csrf": {strings.Repeat("0", 64)}}, nil},
			{"another dashboard's CSRF token", url.Values{"csrf": {other}}, nil},
			{"from another site (Sec-Fetch-Site)", url.Values{"csrf": {good}}, []string{"Sec-Fetch-Site", "cross-site"}},
			{"from another origin", url.Values{"csrf": {good}}, []string{"Origin", "https://evil.example"}},
		}
		for _, c := range cases {
			if status, body := e.post(path+"/cancel", c.form, c.hdr...); status != http.StatusForbidden {
				t.Errorf("%s: %d, want 403:\n%s", c.name, status, body)
			}
		}
		if status, _ := e.get(path + "/cancel"); status != http.StatusMethodNotAllowed {
			t.Errorf("GET of an action = %d, want 405", status)
		}
		if e.state(j.ID) != leasehold.StatePending {
			t.Fatalf("a forged request changed the job")
		}
		if status, _ := e.post(path+"/cancel", url.Values{"csrf": {good}}); status != http.StatusSeeOther {
			t.Errorf("the genuine request = %d, want 303", status)
		}
	})
}

// TestReadOnly: a read-only dashboard shows no action and refuses every
// change, even to an authenticated operator.
func TestReadOnly(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		e := newEnv(t, d, web.Options{Token: testToken, ReadOnly: true})
		e.login()
		j := e.insert("q", "k", `{}`)
		path := "/jobs/" + strconv.FormatInt(j.ID, 10)
		body := e.mustGet(path)
		if strings.Contains(body, `id="cancel"`) || !strings.Contains(body, "read-only") {
			t.Errorf("a read-only job page:\n%s", body)
		}
		csrf := e.csrf(path)
		for _, p := range []string{path + "/cancel", path + "/retry", "/rescue"} {
			if status, _ := e.post(p, url.Values{"csrf": {csrf}, "action": {"cancel"}, "id": {"1"}}); status != http.StatusForbidden {
				t.Errorf("POST %s read-only = %d, want 403", p, status)
			}
		}
		if status, _ := e.post("/bulk", url.Values{"csrf": {csrf}, "action": {"cancel"}, "id": {strconv.FormatInt(j.ID, 10)}}); status != http.StatusForbidden {
			t.Errorf("bulk read-only = %d, want 403", status)
		}
		if e.state(j.ID) != leasehold.StatePending {
			t.Fatalf("a read-only dashboard changed the job")
		}
	})
}

// xss is a payload that breaks out of text, of a quoted attribute and of
// a script.
const xss = `<script>alert(1)</script>" onmouseover="alert(2)' x='</pre><img src=x onerror=alert(3)>`

// TestEscaping: nothing from a job's arguments, metadata, error or owner
// reaches a page unescaped.
func TestEscaping(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		e := newEnv(t, d, web.Options{})
		c, err := leasehold.NewClient(leasehold.Config{Driver: d})
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.Insert(t.Context(), leasehold.RawArgs{KindName: "k", JSON: []byte(`{"x":` + strconv.Quote(xss) + `}`)},
			&leasehold.InsertOpts{Queue: "q", Metadata: []byte(`{"m":` + strconv.Quote(xss) + `}`)})
		if err != nil {
			t.Fatalf("Insert: %v", err)
		}
		j := res.Job
		a := e.claim(j.ID, "owner"+strings.ReplaceAll(strings.ReplaceAll(xss, "<", "["), ">", "]"), time.Minute, false)
		e.finish(a, leasehold.OutcomeRetried, xss)
		b := e.insert("q", "k", `{}`)
		e.claim(b.ID, `w"><b>owner`, time.Minute, false)
		pages := []string{"/jobs/" + strconv.FormatInt(j.ID, 10), "/jobs", "/jobs?state=pending", "/workers", "/attention",
			"/jobs?owner=" + url.QueryEscape(`w"><b>owner`)}
		for _, p := range pages {
			body := e.mustGet(p)
			for _, bad := range []string{"<script>alert", `" onmouseover="`, "<img src=x", `"><b>owner`} {
				if strings.Contains(body, bad) {
					t.Errorf("%s carries %q unescaped", p, bad)
				}
			}
		}
		if body := e.mustGet(pages[0]); !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") {
			t.Errorf("the job page does not show the escaped payload:\n%s", body)
		}
	})
}

// TestHeaders: every answer carries the security headers, and the
// dashboard works under a prefix.
func TestHeaders(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		e := newEnv(t, d, web.Options{Prefix: "/ops/queue"})
		resp, err := http.Get(e.base + "/jobs")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		csp := resp.Header.Get("Content-Security-Policy")
		if resp.StatusCode != http.StatusOK || strings.Contains(csp, "unsafe-inline") || !strings.Contains(csp, "script-src") &&
			!strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "frame-ancestors 'none'") {
			t.Errorf("status %d, CSP %q", resp.StatusCode, csp)
		}
		if resp.Header.Get("X-Frame-Options") != "DENY" || resp.Header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("headers %v", resp.Header)
		}
		// An error page too is HTML, with the headers.
		resp, err = http.Get(e.base + "/jobs/999999")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || resp.Header.Get("Content-Type") != "text/html; charset=utf-8" ||
			resp.Header.Get("Content-Security-Policy") == "" {
			t.Errorf("error page: %d %v", resp.StatusCode, resp.Header)
		}
		body := e.mustGet("/")
		if !strings.Contains(body, `href="/ops/queue/static/style.css"`) || !strings.Contains(body, `href="/ops/queue/jobs"`) {
			t.Errorf("links without the prefix:\n%s", body)
		}
		e.mustGet("/static/style.css")
	})
}

// TestNewRefusesBadOptions: New checks its options; a token of white
// space is no token.
func TestNewRefusesBadOptions(t *testing.T) {
	if _, err := web.New(nil, web.Options{}); err == nil {
		t.Errorf("New without a client succeeded")
	}
	c, err := leasehold.NewClient(leasehold.Config{Driver: sqlitetestOpen(t)})
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range []web.Options{{Prefix: "ops"}, {BasicUser: "u"}, {Secret: []byte("short")}, {Token: " "}, {Token: "\t\n"},
		{BasicUser: " ", BasicPassword: "p"}, {BasicUser: "u", BasicPassword: "\t"},
		{Prefix: "/a b"}, {Prefix: "/a?b"}, {Prefix: "/a#b"}, {Prefix: "//x"}, {Prefix: "/x/../y"}, {Prefix: "/%zz"}, {Prefix: "///"}, {Prefix: "/a;b"},
		{SessionLifetime: -time.Hour}, {SessionLifetime: time.Millisecond}} {
		if _, err := web.New(c, o); err == nil {
			t.Errorf("New(%+v) succeeded", o)
		}
	}
}

// TestCheckPrefix: the prefixes a dashboard can be mounted at pass, with or
// without a trailing slash; one with a byte a cookie's Path cannot hold
// (;, which net/http drops, so the login would not stick) is refused, as
// are spaces, queries, fragments and escapes.
func TestCheckPrefix(t *testing.T) {
	for _, p := range []string{"", "/", "/ops", "/ops/", "/ops/queue", "/a-b_c.d~e", "/v1:x@y", "/a!$&'()*+,=b"} {
		if err := web.CheckPrefix(p); err != nil {
			t.Errorf("CheckPrefix(%q) = %v, want nil", p, err)
		}
	}
	for _, p := range []string{"/a;b", "/;", "/ops;/", "/a\x7fb", "/a\x00b", "/a b", "/a?b", "/a#b", "/%3b", "/é"} {
		if err := web.CheckPrefix(p); err == nil {
			t.Errorf("CheckPrefix(%q) = nil, want an error", p)
		}
	}
}
