package main

import (
	"context"
	"errors"
	"io"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/internal/testdb"
	"github.com/leasehold/leasehold/view"
)

// TestServeRefusesPublicWithoutAuth: serve refuses to listen on anything
// but loopback without a token or credentials, and checks its flags.
func TestServeRefusesPublicWithoutAuth(t *testing.T) {
	db := "sqlite:" + t.TempDir() + "/lh.db"
	ok(t, db, "migrate")
	cases := []struct {
		name string
		env  []string
		args []string
		want string
	}{
		{"every interface", nil, []string{"--addr", ":0"}, "without authentication"},
		{"a public address", nil, []string{"--addr", "0.0.0.0:0"}, "without authentication"},
		{"a public IPv6 address", nil, []string{"--addr", "[::]:0"}, "without authentication"},
		{"a host name", nil, []string{"--addr", "example.com:0"}, "without authentication"},
		{"read-only is no authentication", nil, []string{"--addr", "0.0.0.0:0", "--read-only"}, "without authentication"},
		{"half the basic credentials", []string{envWebUser + "=ops"}, []string{"--addr", "0.0.0.0:0"}, "both a user and a password"},
		{"a bad address", nil, []string{"--addr", "nowhere"}, "want host:port"},
		{"a port out of range", nil, []string{"--addr", "127.0.0.1:99999"}, "want host:port with a port from 0 to 65535"},
		{"a bad prefix", nil, []string{"--prefix", "queue"}, "must start with /"},
		{"an address that does not resolve", []string{envWebToken + "=" + serveTestToken}, []string{"--addr", "256.0.0.1:80"}, "--addr: lookup 256.0.0.1"},
		{"a prefix with a space", nil, []string{"--prefix", "/a b"}, "is not a clean URL path"},
		{"a prefix with a query", nil, []string{"--prefix", "/a?b"}, "is not a clean URL path"},
		{"a prefix climbing out", nil, []string{"--prefix", "/../x"}, "is not a clean URL path"},
		{"a prefix with two slashes", nil, []string{"--prefix", "//x"}, "is not a clean URL path"},
		{"a prefix with a semicolon", nil, []string{"--prefix", "/a;b"}, "is not a clean URL path"},
		{"blank basic credentials", nil, []string{"--addr", "0.0.0.0:0", "--basic-user", " ", "--basic-password", " "}, "is blank"},
		{"a blank basic password", []string{envWebUser + "=ops", envWebPassword + "=\t"}, []string{"--addr", "127.0.0.1:0"}, "is blank"},
		{"a blank token", []string{envWebToken + "= "}, []string{"--addr", "0.0.0.0:0"}, "the token ($" + envWebToken + " or --token) is blank"},
		{"a blank token on loopback", []string{envWebToken + "=\t "}, []string{"--addr", "127.0.0.1:0"}, "the token ($" + envWebToken + " or --token) is blank"},
		{"a blank --token", nil, []string{"--addr", "[::]:0", "--token", "  "}, "the token ($" + envWebToken + " or --token) is blank"},
		{"a short token", []string{envWebToken + "=hunter2"}, []string{"--addr", "127.0.0.1:0"}, "has fewer than 16 characters"},
		// A user no client could send (RFC 7617), refused at once.
		{"a basic user with a colon", nil, []string{"--basic-user", "ops:team", "--basic-password", serveTestToken, "--addr", "127.0.0.1:0"}, "BasicUser holds a colon"},
		{"a short basic password", nil, []string{"--basic-user", "ops", "--basic-password", "pw", "--addr", "127.0.0.1:0"}, "basic-auth password (--basic-password"},
		{"no session lifetime", nil, []string{"--session-lifetime", "0s"}, `--session-lifetime "0s": duration 0s is too short (minimum 1m)`},
		{"a negative session lifetime", nil, []string{"--session-lifetime", "-1h"}, `--session-lifetime "-1h": negative duration -1h`},
		// A bad --addr too: a lifetime wrongly accepted fails at once, not
		// with a dashboard that runs until the test's timeout.
		{"a session lifetime under a minute", nil, []string{"--session-lifetime", "30s", "--addr", "nowhere"}, "is too short (minimum 1m)"},
		{"an absurd session lifetime", nil, []string{"--session-lifetime", "100000h", "--addr", "nowhere"}, "is too long (maximum 400d)"},
	}
	for _, c := range cases {
		r := runIn(t, "", c.env, append([]string{"--db", db, "serve"}, c.args...)...)
		if r.code != cli.ExitUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("%s: %s\nwant exit %d and %q", c.name, r, cli.ExitUsage, c.want)
		}
	}
}

// TestServeSessionLifetimeInDays: --session-lifetime takes days, as the
// other duration flags do.
func TestServeSessionLifetimeInDays(t *testing.T) {
	db := "sqlite:" + t.TempDir() + "/lh.db"
	ok(t, db, "migrate")
	s := startServe(t, db, []string{envWebToken + "=" + serveTestToken}, "--addr", "127.0.0.1:0", "--session-lifetime", "7d")
	s.stop(t)
}

// TestServe: serve runs the dashboard on both databases; with a token from
// the environment it takes changes (bearer token) and refuses them without
// it, on a public address too; SIGTERM stops it cleanly.
func TestServe(t *testing.T) {
	forEachDB(t, func(t *testing.T, db string) {
		id := enqueueID(t, db, "leasehold.sleep", "--args", `{"duration":"1s"}`)
		for _, addr := range []string{"127.0.0.1:0", "0.0.0.0:0"} {
			s := startServe(t, db, []string{envWebToken + "=" + serveTestToken}, "--addr", addr, "--prefix", "/queue")
			base := strings.Replace(s.url, "0.0.0.0", "127.0.0.1", 1)
			if msg := s.bg.stderr.String(); !strings.Contains(msg, "(every page and change needs the token)") {
				t.Errorf("serve with a token does not say every page needs it: %s", msg)
			}
			if status, _ := fetch(t, http.MethodGet, base+"jobs", ""); status == http.StatusOK {
				t.Errorf("GET jobs without the token = %d, want it refused", status)
			}
			status, body := fetch(t, http.MethodGet, base+"jobs", serveTestToken)
			if status != http.StatusOK || !strings.Contains(body, "/queue/jobs/") {
				t.Fatalf("GET jobs with the token = %d:\n%s", status, body)
			}
			if status, _ := fetch(t, http.MethodPost, base+"jobs/"+strconv.FormatInt(id, 10)+"/cancel", "wrong"); status != http.StatusUnauthorized {
				t.Errorf("cancel with a wrong token = %d, want 401", status)
			}
			s.stop(t)
		}
		if j := showJob(t, db, id); j.Status != "pending" {
			t.Fatalf("an unauthenticated cancel changed the job: %s", j.Status)
		}
		s := startServe(t, db, []string{envWebToken + "=" + serveTestToken})
		if status, _ := fetch(t, http.MethodPost, s.url+"jobs/"+strconv.FormatInt(id, 10)+"/cancel", serveTestToken); status != http.StatusSeeOther {
			t.Errorf("cancel with the token = %d, want 303", status)
		}
		if j := showJob(t, db, id); j.Status != "cancelled" {
			t.Errorf("after the dashboard's cancel: %s, want cancelled", j.Status)
		}
		s.stop(t)

		enqueueID(t, db, "leasehold.sleep", "--args", `{"duration":"1s"}`)
		open := startServe(t, db, nil)
		if !strings.Contains(open.bg.stderr.String(), "read-only: no authentication configured") {
			t.Errorf("serve without authentication does not say it is read-only: %s", open.bg.stderr.String())
		}
		if status, _ := fetch(t, http.MethodGet, open.url, ""); status != http.StatusOK {
			t.Errorf("overview = %d", status)
		}
		if status, body := fetch(t, http.MethodGet, open.url+"metrics", ""); status != http.StatusOK ||
			!strings.Contains(body, `leasehold_queue_jobs{queue="default",state="pending"} 1`) {
			t.Errorf("GET /metrics = %d, want the queue gauges of the database:\n%s", status, body)
		}
		open.stop(t)
	})
}

// served is a running `leasehold serve`.
type served struct {
	bg  *background
	url string
}

// serveTestToken is the dashboard token of the serve tests.
const serveTestToken = "serve-test-token-0123"

var servingRE = regexp.MustCompile(`dashboard at (http://\S+/) `)

// startServe starts serve on a free loopback port (or per args) with env.
func startServe(t *testing.T, db string, env []string, args ...string) *served {
	t.Helper()
	if len(args) == 0 {
		args = []string{"--addr", "127.0.0.1:0"}
	}
	ctx, cancel := context.WithCancel(context.Background())
	b := &background{done: make(chan error, 1)}
	b.cmd = command(ctx, "", env, append([]string{"--db", db, "serve"}, args...)...)
	b.cmd.Stdout, b.cmd.Stderr = &b.stdout, &b.stderr
	if err := b.cmd.Start(); err != nil {
		t.Fatalf("start serve: %v", err)
	}
	go func() { b.done <- b.cmd.Wait() }()
	t.Cleanup(func() {
		cancel()
		<-b.done
	})
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if m := servingRE.FindStringSubmatch(b.stderr.String()); m != nil {
			return &served{bg: b, url: m[1]}
		}
		select {
		case err := <-b.done:
			b.done <- err
			t.Fatalf("serve exited: %v\n%s", err, b.stderr.String())
		case <-time.After(20 * time.Millisecond):
		}
	}
	t.Fatalf("serve did not start:\n%s", b.stderr.String())
	return nil
}

// stop sends SIGTERM and expects a clean exit.
func (s *served) stop(t *testing.T) {
	t.Helper()
	if err := s.bg.cmd.Process.Signal(syscall.SIGTERM); err != nil && err != os.ErrProcessDone {
		t.Fatalf("signal serve: %v", err)
	}
	if err := s.bg.wait(t); err != nil {
		t.Errorf("serve after SIGTERM: %v\n%s", err, s.bg.stderr.String())
	}
}

// fetch sends a request with the bearer token (none when empty) and
// returns its status and body.
func fetch(t *testing.T, method, url, token string) (int, string) {
	t.Helper()
	resp, body := send(t, method, url, token)
	return resp.StatusCode, body
}

// send sends a request with the bearer token (none when empty), following
// no redirect, and returns the answer and its body, read and closed.
func send(t *testing.T, method, url, token string) (*http.Response, string) {
	t.Helper()
	return sendHost(t, method, url, "", token)
}

// sendHost is send with the Host header host (the URL's when empty).
func sendHost(t *testing.T, method, url, host, token string) (*http.Response, string) {
	t.Helper()
	req, _ := http.NewRequestWithContext(t.Context(), method, url, nil)
	if host != "" {
		req.Host = host
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	c := &http.Client{Timeout: 30 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp, string(b)
}

// TestServeRescueAppliesPolicy: the dashboard's "run the stuck watcher
// now" applies the queue policies serve was given, as `watch` does: an
// expired lease of a queue that reconciles goes to reconciling with a
// reconcile job, one of a queue that flags goes to stuck, never back to
// pending.
func TestServeRescueAppliesPolicy(t *testing.T) {
	forEachDB(t, func(t *testing.T, db string) {
		ids := killedHolding(t, db, "pay", "flag")
		pay, flag := ids[0], ids[1]
		waitFor(t, 30*time.Second, "both leases expired", func() bool {
			var jobs []view.JobView
			okJSON(t, db, &jobs, "jobs", "stuck")
			return len(jobs) == 2 && jobs[0].Lease != nil && jobs[0].Lease.Expired && jobs[1].Lease != nil && jobs[1].Lease.Expired
		})
		s := startServe(t, db, []string{envWebToken + "=" + serveTestToken}, "--addr", "127.0.0.1:0", "--reconcile", "pay=rec", "--flag-stuck", "flag")
		if status, body := fetch(t, http.MethodPost, s.url+"rescue", serveTestToken); status != http.StatusSeeOther && status != http.StatusOK {
			t.Fatalf("POST rescue = %d:\n%s", status, body)
		}
		s.stop(t)
		if j := showJob(t, db, pay); j.Status != "reconciling" {
			t.Errorf("job of the reconciling queue after the dashboard's rescue: %s, want reconciling", j.Status)
		}
		if j := showJob(t, db, flag); j.Status != "stuck" {
			t.Errorf("job of the flagging queue after the dashboard's rescue: %s, want stuck", j.Status)
		}
		var recs []view.JobView
		okJSON(t, db, &recs, "jobs", "list", "--queue", "rec")
		if len(recs) != 1 || recs[0].Kind != "leasehold.reconcile" {
			t.Errorf("reconcile jobs = %+v, want one leasehold.reconcile", recs)
		}
	})
}

// TestServeSecurityHeaders: every answer of serve carries the dashboard's
// security headers, its own too (the redirect to the prefix, a 404 outside
// it, the metrics); with --secure-cookies the dashboard's cookies are
// Secure over the plain HTTP a TLS-terminating proxy forwards.
func TestServeSecurityHeaders(t *testing.T) {
	db := "sqlite:" + t.TempDir() + "/lh.db"
	ok(t, db, "migrate")
	s := startServe(t, db, []string{envWebToken + "=" + serveTestToken}, "--addr", "127.0.0.1:0", "--prefix", "/queue", "--secure-cookies")
	defer s.stop(t)
	root := strings.TrimSuffix(s.url, "queue/")
	for _, c := range []struct {
		path   string
		status int
	}{{"queue", http.StatusMovedPermanently}, {"elsewhere", http.StatusNotFound}, {"metrics", http.StatusOK},
		{"queue/static/nope.css", http.StatusNotFound}, {"queue/jobs", http.StatusOK}} {
		resp := fetchResp(t, root+c.path, serveTestToken)
		h := resp.Header
		if resp.StatusCode != c.status || !strings.Contains(h.Get("Content-Security-Policy"), "default-src 'none'") ||
			h.Get("X-Frame-Options") != "DENY" || h.Get("X-Content-Type-Options") != "nosniff" ||
			h.Get("Cache-Control") != "no-store" || h.Get("Referrer-Policy") != "same-origin" {
			t.Errorf("GET /%s = %d, headers %v; want %d with the security headers", c.path, resp.StatusCode, h, c.status)
		}
	}
	resp := fetchResp(t, s.url+"login", "")
	var secure bool
	for _, c := range resp.Cookies() {
		secure = secure || c.Name == "leasehold_csrf" && c.Secure
	}
	if !secure {
		t.Errorf("with --secure-cookies the login page's CSRF cookie is not Secure: %v", resp.Header["Set-Cookie"])
	}
}

// fetchResp sends a GET with the bearer token (none when empty) and
// returns the answer, its body read and closed.
func fetchResp(t *testing.T, url, token string) *http.Response {
	t.Helper()
	resp, _ := send(t, http.MethodGet, url, token)
	return resp
}

// TestServeStopsWhenItsFileIsGone: serve exits 1, naming the file, once
// the SQLite file it reads is removed, as work and watch do, instead of
// answering every page 500 (and /metrics 200) until restarted by hand.
func TestServeStopsWhenItsFileIsGone(t *testing.T) {
	path := testdb.SQLitePath(t)
	db := "sqlite:" + path
	ok(t, db, "migrate")
	s := startServe(t, db, nil)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	err := s.bg.wait(t)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != cli.ExitFailure ||
		!strings.Contains(s.bg.stderr.String(), "was removed while the process had it open") {
		t.Fatalf("serve after its file was removed: %v, want exit 1 naming the file\n%s", err, s.bg.stderr.String())
	}
}
