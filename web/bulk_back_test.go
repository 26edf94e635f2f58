package web_test

import (
	"html"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/web"
)

// TestBulkResultBackKeepsFilter: the confirmation page posts the list's
// filter with the action, and the result page's back link returns to the
// list so filtered, under the dashboard's prefix; a back that is not the
// jobs list under the prefix (another site, a protocol-relative or
// backslash address, another path) gives the plain list instead.
func TestBulkResultBackKeepsFilter(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		e := newEnv(t, d, web.Options{Prefix: "/admin", BasicUser: "ops", BasicPassword: testPassword})
		e.http.Transport = basicAuth{"ops", testPassword}
		e.insert("x", "k", `{}`)
		body := e.mustGet("/bulk?action=cancel&queue=x&kind=k")
		if !strings.Contains(body, `href="/admin/jobs?kind=k&amp;queue=x">back</a>`) {
			t.Fatalf("the confirmation's back link does not keep the filter:\n%s", body)
		}
		form := formOf(body)
		form.Set("back", html.UnescapeString(form.Get("back"))) // as a browser reads the attribute
		if got := form.Get("back"); got != "/admin/jobs?kind=k&queue=x" {
			t.Errorf("the confirmation posts back %q, want the filtered list", got)
		}
		post := func(back string) string {
			t.Helper()
			j := e.insert("x", "k", `{}`)
			f := url.Values{"csrf": {form.Get("csrf")}, "action": {"cancel"}, "id": {strconv.FormatInt(j.ID, 10)}}
			if back != "" {
				f.Set("back", back)
			}
			status, body := e.post("/bulk", f)
			if status != http.StatusOK || !strings.Contains(body, "cancel: 1 job(s) done") {
				t.Fatalf("bulk cancel with back %q = %d:\n%s", back, status, body)
			}
			return body
		}
		for back, want := range map[string]string{
			form.Get("back"):                    `href="/admin/jobs?kind=k&amp;queue=x">back</a>`,
			"/admin/jobs?queue=x&order=oldest":  `href="/admin/jobs?order=oldest&amp;queue=x">back</a>`,
			"/admin/jobs":                       `href="/admin/jobs">back</a>`,
			"":                                  `href="/admin/jobs">back</a>`,
			"https://evil.example/admin/jobs":   `href="/admin/jobs">back</a>`,
			"//evil.example/admin/jobs":         `href="/admin/jobs">back</a>`,
			`/\evil.example/admin/jobs`:         `href="/admin/jobs">back</a>`,
			"/jobs?queue=x":                     `href="/admin/jobs">back</a>`,
			"/admin/jobs/../../evil?queue=x":    `href="/admin/jobs">back</a>`,
			"/admin/jobsx?queue=x":              `href="/admin/jobs">back</a>`,
			"javascript:alert(1)//admin/jobs":   `href="/admin/jobs">back</a>`,
			"/admin/jobs?queue=%zz":             `href="/admin/jobs">back</a>`,
			"/admin/jobs?queue=x#\"><script>":   `href="/admin/jobs?queue=x">back</a>`,
			"https://evil.example?/admin/jobs":  `href="/admin/jobs">back</a>`,
			"/admin/jobs@evil.example/?queue=x": `href="/admin/jobs">back</a>`,
		} {
			if body := post(back); !strings.Contains(body, want) {
				i := max(strings.Index(body, `id="result"`), 0)
				t.Errorf("back %q: want %s in\n%s", back, want, body[i:])
			}
		}
	})
}
