package main

import (
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"
)

// serveHostSecret is in the arguments of the job the Host tests show.
const serveHostSecret = "4111-host-secret"

// TestServeRefusesForeignHostWithoutAuth: serve without authentication
// answers 403, with the security headers and without the job, to a
// request whose Host is not a loopback name, as a page whose own name
// was rebound to 127.0.0.1 sends it (the dashboard's pages and the
// metrics alike), and serves the loopback names: localhost, 127.0.0.1,
// [::1], with a port or not.
func TestServeRefusesForeignHostWithoutAuth(t *testing.T) {
	db := "sqlite:" + t.TempDir() + "/lh.db"
	ok(t, db, "migrate")
	id := enqueueID(t, db, "leasehold.sleep", "--args", `{"duration":"1s","card":"`+serveHostSecret+`"}`)
	job := "jobs/" + strconv.FormatInt(id, 10)
	s := startServe(t, db, nil)
	defer s.stop(t)
	port := urlPort(t, s.url)
	for _, host := range []string{"attacker.example:" + port, "attacker.example", "127.0.0.1.attacker.example:" + port,
		"localhost.attacker.example:" + port, "[::2]:" + port, "10.0.0.1:" + port} {
		for _, path := range []string{job, "", "metrics", "nowhere"} {
			status, body, h := hostFetch(t, s.url+path, host, "")
			if status != http.StatusForbidden || strings.Contains(body, serveHostSecret) ||
				h.Get("X-Content-Type-Options") != "nosniff" || h.Get("Cache-Control") != "no-store" {
				t.Errorf("GET /%s with Host %s = %d, headers %v, want 403 with the security headers:\n%s", path, host, status, h, body)
			}
		}
	}
	for _, host := range []string{"127.0.0.1:" + port, "localhost:" + port, "LocalHost:" + port, "[::1]:" + port,
		"[::ffff:127.0.0.1]:" + port, "127.0.0.2:" + port, "localhost", "127.0.0.1", "[::1]"} {
		if status, body, _ := hostFetch(t, s.url+job, host, ""); status != http.StatusOK || !strings.Contains(body, serveHostSecret) {
			t.Errorf("GET /%s with Host %s = %d, want 200 with the job:\n%s", job, host, status, body)
		}
	}
	if status, _, _ := hostFetch(t, s.url+"metrics", "localhost:"+port, ""); status != http.StatusOK {
		t.Errorf("GET /metrics with Host localhost:%s = %d, want 200", port, status)
	}
}

// TestServeHostOverIPv6Loopback: serve without authentication on [::1]
// serves the Host a client sends there, and refuses a foreign one.
func TestServeHostOverIPv6Loopback(t *testing.T) {
	ln, err := net.Listen("tcp", "[::1]:0")
	if err != nil {
		t.Skipf("no IPv6 loopback (the Host [::1] is tested on 127.0.0.1): %v", err)
	}
	_ = ln.Close()
	db := "sqlite:" + t.TempDir() + "/lh.db"
	ok(t, db, "migrate")
	s := startServe(t, db, nil, "--addr", "[::1]:0")
	defer s.stop(t)
	if status, body := fetch(t, http.MethodGet, s.url, ""); status != http.StatusOK {
		t.Errorf("GET %s = %d, want 200:\n%s", s.url, status, body)
	}
	if status, _, _ := hostFetch(t, s.url, "attacker.example:"+urlPort(t, s.url), ""); status != http.StatusForbidden {
		t.Errorf("GET %s with a foreign Host = %d, want 403", s.url, status)
	}
}

// TestServeAnyHostWithAuth: with a token, serve answers a foreign Host as
// it does a loopback one (operators reach it under any name): refused
// without the token as authentication refuses it, never 403, and served
// with it.
func TestServeAnyHostWithAuth(t *testing.T) {
	db := "sqlite:" + t.TempDir() + "/lh.db"
	ok(t, db, "migrate")
	id := enqueueID(t, db, "leasehold.sleep", "--args", `{"duration":"1s","card":"`+serveHostSecret+`"}`)
	job := "jobs/" + strconv.FormatInt(id, 10)
	s := startServe(t, db, []string{envWebToken + "=" + serveTestToken}, "--addr", "127.0.0.1:0")
	defer s.stop(t)
	port := urlPort(t, s.url)
	want, _, _ := hostFetch(t, s.url+job, "127.0.0.1:"+port, "")
	if want == http.StatusOK || want == http.StatusForbidden {
		t.Fatalf("GET /%s without the token = %d, want it refused by authentication", job, want)
	}
	for _, host := range []string{"attacker.example:" + port, "queue.example.com"} {
		if status, body, _ := hostFetch(t, s.url+job, host, ""); status != want {
			t.Errorf("GET /%s with Host %s without the token = %d, want %d as on loopback:\n%s", job, host, status, want, body)
		}
		if status, body, _ := hostFetch(t, s.url+job, host, serveTestToken); status != http.StatusOK || !strings.Contains(body, serveHostSecret) {
			t.Errorf("GET /%s with Host %s and the token = %d, want 200 with the job:\n%s", job, host, status, body)
		}
		if status, _, _ := hostFetch(t, s.url+"metrics", host, ""); status != http.StatusOK {
			t.Errorf("GET /metrics with Host %s = %d, want 200", host, status)
		}
	}
}

// urlPort returns the port of the URL u.
func urlPort(t *testing.T, u string) string {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil || p.Port() == "" {
		t.Fatalf("serve's URL %q has no port: %v", u, err)
	}
	return p.Port()
}

// hostFetch sends a GET to u with the Host header host and the bearer
// token (none when empty), following no redirect, and returns the status,
// the body and the headers of the answer.
func hostFetch(t *testing.T, u, host, token string) (int, string, http.Header) {
	t.Helper()
	resp, body := sendHost(t, http.MethodGet, u, host, token)
	return resp.StatusCode, body, resp.Header
}
