package web_test

import (
	"bytes"
	"encoding/json"
	"html"
	"mime/multipart"
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

// TestDeepJSONBounded: arguments nested 990 deep, of about 1 MiB, make a
// job page of a few MiB, not the gigabyte indenting them would, and the
// page says they are shown unindented; JSON of ordinary depth is indented
// exactly as json.Indent does.
func TestDeepJSONBounded(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		e := newEnv(t, d, web.Options{})
		const depth = 989 // arrays, in an object: 990 levels
		deep := `{"a":` + strings.Repeat("[", depth) + strings.Repeat("1,", 500_000) + "1" +
			strings.Repeat("]", depth) + "}"
		j := e.insert("q", "k", deep)
		body := e.mustGet("/jobs/" + strconv.FormatInt(j.ID, 10))
		if len(body) > 3<<20 {
			t.Fatalf("the job page of %d bytes of deep JSON is %d bytes", len(deep), len(body))
		}
		if !strings.Contains(body, `id="args-flat"`) || !strings.Contains(body, strings.Repeat("1,", 1000)) {
			t.Errorf("the deep arguments are not shown compacted with a note")
		}

		plain := `{"customer": {"id": "c-1", "tags": ["a", "b"], "empty": {}, "none": []}, "n": 3}`
		p := e.insert("q", "k", plain)
		body = e.mustGet("/jobs/" + strconv.FormatInt(p.ID, 10))
		var want bytes.Buffer
		if err := json.Indent(&want, p.Args, "", "  "); err != nil { // as stored: jsonb orders the keys
			t.Fatal(err)
		}
		if !strings.Contains(body, `<pre class="json" id="args">`+html.EscapeString(want.String())+`</pre>`) ||
			strings.Contains(body, `id="args-flat"`) {
			t.Errorf("ordinary arguments are not indented as before:\n%s", body)
		}
	})
}

// TestFormBodies: a POST body that is multipart, or larger than the
// largest form, is refused (415, 413) before authentication, so that no
// file part is spilled to disk and no unbounded body is read.
func TestFormBodies(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		e := newEnv(t, d, web.Options{Token: testToken})
		j := e.insert("q", "k", `{}`)
		var mp bytes.Buffer
		mw := multipart.NewWriter(&mp)
		_ = mw.WriteField("token", testToken)
		fw, _ := mw.CreateFormFile("f", "big.bin")
		_, _ = fw.Write(bytes.Repeat([]byte("x"), 64<<10))
		_ = mw.Close()
		cancel := "/jobs/" + strconv.FormatInt(j.ID, 10) + "/cancel"
		for _, p := range []string{"/login", cancel} {
			if status, body := e.postRaw(p, mw.FormDataContentType(), mp.Bytes()); status != http.StatusUnsupportedMediaType {
				t.Errorf("multipart POST %s = %d, want 415:\n%s", p, status, body)
			}
		}
		big := "csrf=x&token=" + strings.Repeat("a", 1<<20)
		for _, p := range []string{"/login", cancel} {
			if status, body := e.postRaw(p, "application/x-www-form-urlencoded", []byte(big)); status != http.StatusRequestEntityTooLarge {
				t.Errorf("POST %s of %d bytes = %d, want 413:\n%s", p, len(big), status, body)
			}
		}
		for _, p := range []string{"/login", cancel} {
			if status, body := e.postRaw(p, "text/plain", []byte("csrf=x")); status != http.StatusUnsupportedMediaType {
				t.Errorf("text/plain POST %s = %d, want 415:\n%s", p, status, body)
			}
			if status, body := e.postRaw(p, "application/x-www-form-urlencoded", []byte("csrf=%zz")); status != http.StatusBadRequest {
				t.Errorf("POST %s of a form that does not parse = %d, want 400:\n%s", p, status, body)
			}
		}
		if e.state(j.ID) != leasehold.StatePending {
			t.Fatal("a refused body changed the job")
		}
		e.login() // an ordinary form still goes through
	})
}

// postRaw posts body of content type ct to path (under the prefix).
func (e *env) postRaw(path, ct string, body []byte) (int, string) {
	e.t.Helper()
	req, _ := http.NewRequestWithContext(e.t.Context(), http.MethodPost, e.base+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", ct)
	return e.do(req)
}

// TestSecureCookies: with SecureCookies, the CSRF and session cookies are
// Secure over plain HTTP too (as a TLS-terminating proxy forwards it);
// without, they are not.
func TestSecureCookies(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		for _, secure := range []bool{false, true} {
			e := newEnv(t, d, web.Options{Token: testToken, SecureCookies: secure})
			csrfCookie, session := loginCookies(t, e)
			if csrfCookie.Secure != secure || session.Secure != secure {
				t.Errorf("SecureCookies %v: csrf cookie Secure %v, session cookie Secure %v", secure, csrfCookie.Secure,
					session.Secure)
			}
		}
	})
}

// raw sends a request with no cookie jar, with cookie if not nil, and
// returns the answer, its body closed when the test ends.
func (e *env) raw(method, path, form string, cookie *http.Cookie) *http.Response {
	e.t.Helper()
	req, _ := http.NewRequestWithContext(e.t.Context(), method, e.base+path, strings.NewReader(form))
	if form != "" {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	if cookie != nil {
		req.AddCookie(&http.Cookie{Name: cookie.Name, Value: cookie.Value})
	}
	c := &http.Client{Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		e.t.Fatalf("%s %s: %v", method, path, err)
	}
	e.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// cookieOf returns the cookie name resp sets, failing t without one.
func cookieOf(t *testing.T, resp *http.Response, name string) *http.Cookie {
	t.Helper()
	for _, c := range resp.Cookies() {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no cookie %s in %v", name, resp.Header["Set-Cookie"])
	return nil
}

// TestQueueNameNotEchoed: a refused queue action does not echo the raw
// name: no invalid UTF-8, no terminal escape, no bidi override, not 5,000
// bytes of it.
func TestQueueNameNotEchoed(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		e := newEnv(t, d, web.Options{Token: testToken})
		long := "\x1b[31mred\u202eevil" + strings.Repeat("a", 5000)
		for _, name := range []string{"%ff", url.PathEscape(long)} {
			status, body := e.post("/queues/"+name+"/pause", nil, "Authorization", "Bearer "+testToken)
			if status != http.StatusBadRequest || !strings.Contains(body, "invalid queue name") {
				t.Errorf("pause %s = %d, want 400 saying why:\n%s", name, status, body)
			}
			for _, bad := range []string{"\xff", "\x1b", "\u202e", strings.Repeat("a", 1000)} {
				if strings.Contains(body, bad) {
					t.Errorf("pause %.20s: the page carries %q raw", name, bad[:min(len(bad), 8)])
				}
			}
		}
	})
}

// TestSearchAfterLargestID: a search page after the largest id there can
// be shows no negative id and links to no page that is refused.
func TestSearchAfterLargestID(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		e := newEnv(t, d, web.Options{Token: testToken})
		e.login()
		e.insert("q", "k", `{"customer":"needle"}`)
		for _, p := range []string{"/jobs?search=needle&order=oldest&after=9223372036854775807",
			"/bulk?action=cancel&search=needle&after=9223372036854775807"} {
			body := e.mustGet(p)
			if strings.Contains(body, "-922") || !strings.Contains(body, "no jobs to search in this range") {
				t.Errorf("GET %s shows a window past the largest id:\n%s", p, body)
			}
			for _, m := range hrefRE.FindAllStringSubmatch(body, -1) {
				if l := html.UnescapeString(m[1]); strings.Contains(l, "after=") || strings.Contains(l, "before=") {
					e.mustGet(l)
				}
			}
		}
	})
}

// hrefRE matches the links of a page.
var hrefRE = regexp.MustCompile(`href="([^"]*)"`)

// TestOwnerFilterKeepsSpaces: the workers page's link to the jobs of an
// owner whose name has spaces at its ends lists them; a filter of only
// white space is no filter.
func TestOwnerFilterKeepsSpaces(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		e := newEnv(t, d, web.Options{})
		j := e.insert("q", "k", `{}`)
		e.insert("q", "k", `{}`)
		e.claim(j.ID, "  spaced owner  ", time.Minute, false)
		m := regexp.MustCompile(`href="(/jobs\?owner=[^"]*)"`).FindStringSubmatch(e.mustGet("/workers"))
		if m == nil {
			t.Fatal("the workers page links to no owner's jobs")
		}
		want := strconv.FormatInt(j.ID, 10)
		if ids := jobIDs(e.mustGet(html.UnescapeString(m[1]))); len(ids) != 1 || ids[0] != want {
			t.Errorf("the owner's link %s lists %v, want [%s]", m[1], ids, want)
		}
		if ids := jobIDs(e.mustGet("/jobs?owner=%20%20")); len(ids) != 2 {
			t.Errorf("a blank owner filter lists %v, want both jobs", ids)
		}
	})
}

// TestStaticUnderPrefix: under a prefix, /static is redirected to
// /static/ under the prefix, not out of it; a missing static file is a
// 404 that is not cached.
func TestStaticUnderPrefix(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		e := newEnv(t, d, web.Options{Prefix: "/ops"})
		resp := e.raw(http.MethodGet, "/static", "", nil)
		if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusMovedPermanently || loc != "/ops/static/" {
			t.Errorf("GET /ops/static = %d, Location %q; want a redirect (301) to /ops/static/", resp.StatusCode, loc)
		}
		resp = e.raw(http.MethodGet, "/static/nope.css", "", nil)
		if resp.StatusCode != http.StatusNotFound || resp.Header.Get("Cache-Control") != "no-store" ||
			resp.Header.Get("Content-Security-Policy") == "" {
			t.Errorf("a missing static file = %d, headers %v; want 404, no-store", resp.StatusCode, resp.Header)
		}
	})
}

// TestBulkRepeatedIDs: an id posted several times in one bulk action is
// acted on, and counted, once.
func TestBulkRepeatedIDs(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		e := newEnv(t, d, web.Options{Token: testToken})
		e.login()
		j := e.insert("q", "k", `{}`)
		if _, err := e.client.CancelJob(t.Context(), j.ID); err != nil {
			t.Fatal(err)
		}
		id := strconv.FormatInt(j.ID, 10)
		status, body := e.post("/bulk", url.Values{"csrf": {e.csrf("/jobs")}, "action": {"retry"}, "id": {id, id, id}})
		if status != http.StatusOK || !strings.Contains(body, "retry: 1 job(s) done.") {
			t.Errorf("bulk retry of one id posted 3 times = %d:\n%s", status, body)
		}
		if e.state(j.ID) != leasehold.StatePending {
			t.Errorf("job %d is %s, want pending", j.ID, e.state(j.ID))
		}
	})
}

// TestNoticesChecked: a link cannot make a page say that an action was
// done that was not: the deleted notice names only a job that does not
// exist, the cancel and retry notices only a job in the state they leave.
func TestNoticesChecked(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		e := newEnv(t, d, web.Options{})
		j := e.insert("q", "k", `{}`)
		id := strconv.FormatInt(j.ID, 10)
		if body := e.mustGet("/jobs?deleted=" + id); strings.Contains(body, `id="deleted"`) {
			t.Errorf("the jobs page says job %s was deleted, which exists", id)
		}
		if body := e.mustGet("/jobs/" + id + "?done=cancel"); strings.Contains(body, "was cancelled") {
			t.Errorf("the page of pending job %s says it was cancelled", id)
		}
		c := e.ended("q", leasehold.OutcomeFailed)
		if body := e.mustGet("/jobs/" + strconv.FormatInt(c.ID, 10) + "?done=retry"); strings.Contains(body, "pending again") {
			t.Errorf("the page of failed job %d says it is pending again", c.ID)
		}
	})
}
