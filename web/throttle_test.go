package web_test

import (
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/web"
)

// TestFailedLoginsThrottled: after FailedLoginBurst wrong tokens from one
// address, its next attempts are answered 429 with Retry-After and left
// unchecked, the right token included, on the login form and the bearer
// header alike; a browser logged in before keeps its session.
func TestFailedLoginsThrottled(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		e := newEnv(t, d, web.Options{Token: testToken})
		e.login()
		jar, _ := cookiejar.New(nil)
		guesser := *e // another browser of the same dashboard
		guesser.http = &http.Client{Jar: jar, CheckRedirect: e.http.CheckRedirect}
		csrf := guesser.csrf("/login")
		for i := range web.FailedLoginBurst {
			if status, _ := guesser.post("/login", url.Values{"csrf": {csrf}, "token": {"guess-" + strconv.Itoa(i)}}); status != http.StatusUnauthorized {
				t.Fatalf("wrong token %d = %d, want 401", i, status)
			}
		}
		for name, try := range map[string]func() (int, string){
			"the login form": func() (int, string) {
				return guesser.post("/login", url.Values{"csrf": {csrf}, "token": {testToken}})
			},
			"the bearer header": func() (int, string) { return guesser.get("/", "Authorization", "Bearer "+testToken) },
		} {
			status, body := try()
			if status != http.StatusTooManyRequests || !strings.Contains(body, "too many failed attempts") {
				t.Errorf("the right token through %s after %d wrong ones = %d, want 429:\n%s", name, web.FailedLoginBurst, status, body)
			}
		}
		resp, err := guesser.http.Get(e.base + "/")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusSeeOther && resp.StatusCode != http.StatusOK {
			t.Errorf("a page with no credentials at all = %d: it counts no attempt", resp.StatusCode)
		}
		if status, _ := e.get("/"); status != http.StatusOK {
			t.Errorf("a browser logged in before = %d, want 200", status)
		}
		r, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, e.base+"/", nil)
		r.Header.Set("Authorization", "Bearer wrong")
		resp, err = http.DefaultClient.Do(r)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusTooManyRequests || resp.Header.Get("Retry-After") == "" {
			t.Errorf("a wrong bearer token = %d, Retry-After %q: want 429 with Retry-After", resp.StatusCode, resp.Header.Get("Retry-After"))
		}
	})
}
