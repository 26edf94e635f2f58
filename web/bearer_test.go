package web_test

import (
	"net/http"
	"slices"
	"testing"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/web"
)

// TestBearerSchemeAnyCase: the Authorization scheme's name is matched in
// any case (RFC 7235), with spaces before the token skipped; the right
// token so sent is no failed attempt, however often it comes.
func TestBearerSchemeAnyCase(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		e := newEnv(t, d, web.Options{Token: testToken})
		for _, h := range []string{"Bearer ", "bearer ", "BEARER ", "bEaReR   "} {
			if status, _ := e.get("/jobs", "Authorization", h+testToken); status != http.StatusOK {
				t.Errorf("GET with %q and the token = %d, want 200", h, status)
			}
		}
		for i := range web.FailedLoginBurst + 2 {
			if status, _ := e.post("/rescue", nil, "Authorization", "bearer "+testToken); status != http.StatusOK {
				t.Errorf("rescue %d with \"bearer\" and the token = %d, want 200", i, status)
				break
			}
		}
		if status, _ := e.post("/rescue", nil, "Authorization", "Bearer "+testToken); status != http.StatusOK {
			t.Errorf("rescue after %d requests with \"bearer\" = %d, want 200 (not throttled)", web.FailedLoginBurst+2, status)
		}
	})
}

// TestWrongCredentialsAnswered401: a page asked for with an Authorization
// header that fails is answered 401, not redirected to the login form; a
// page asked for with no credentials at all is redirected there.
func TestWrongCredentialsAnswered401(t *testing.T) {
	drivers(t, func(t *testing.T, d driver.Driver) {
		e := newEnv(t, d, web.Options{Token: testToken})
		for _, h := range []string{"Bearer wrong", "Bearer", "Bearer" + testToken, "Token " + testToken, "Basic Zm9vOmJhcg=="} {
			if status, _ := e.get("/jobs", "Authorization", h); status != http.StatusUnauthorized {
				t.Errorf("GET with Authorization %q = %d, want 401", h, status)
			}
		}
		if status, _ := e.get("/jobs"); status != http.StatusSeeOther {
			t.Errorf("GET without credentials = %d, want 303 to the login page", status)
		}
		b := newEnv(t, d, web.Options{Token: testToken, BasicUser: "ops", BasicPassword: testPassword})
		for _, tc := range []struct {
			name string
			e    *env
			want []string
		}{
			{"token only", e, []string{`Bearer realm="leasehold"`}},
			{"token and basic auth", b, []string{`Basic realm="leasehold", charset="UTF-8"`, `Bearer realm="leasehold"`}},
		} {
			req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, tc.e.base+"/jobs", nil)
			req.Header.Set("Authorization", "Bearer wrong")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if got := resp.Header.Values("WWW-Authenticate"); resp.StatusCode != http.StatusUnauthorized || !slices.Equal(got, tc.want) {
				t.Errorf("%s, wrong bearer: %d %q, want 401 with the challenges %q", tc.name, resp.StatusCode, got, tc.want)
			}
		}
	})
}
