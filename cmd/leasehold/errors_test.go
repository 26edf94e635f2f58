package main

import (
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/internal/testdb"
)

// TestBadInput: bad input gets one line on stderr, "leasehold: ...", the
// documented exit code, and never a panic or a stack.
func TestBadInput(t *testing.T) {
	notADB := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(notADB, []byte("this is not a database, just some text that is long enough to matter\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	busy := busyAddr(t)
	cases := []struct {
		name string
		args []string
		code int
		want string
	}{
		{"malformed postgres URL", []string{"--db", "postgres://me@db.example:notaport/app", "jobs", "list"}, cli.ExitUsage, "malformed database URL"},
		{"unreachable postgres", []string{"--db", "postgres://postgres@127.0.0.1:1/app?sslmode=disable", "jobs", "list"}, cli.ExitFailure, "cannot reach database"},
		{"password not echoed", []string{"--db", "postgres://me:s3cret@127.0.0.1:1/app?sslmode=disable", "queues"}, cli.ExitFailure, "xxxxx"},
		{"password parameter not echoed", []string{"--db", "postgres://me@127.0.0.1:1/app?sslmode=disable&password=s3cret", "queues"}, cli.ExitFailure, "password=xxxxx"},
		{"sslpassword parameter not echoed", []string{"--db", "postgres://me@127.0.0.1:1/app?sslmode=disable&sslpassword=s3cret", "queues"}, cli.ExitFailure, "sslpassword=xxxxx"},
		{"unknown URL scheme", []string{"--db", "mysql://db.example/app", "jobs", "list"}, cli.ExitUsage, "unsupported database URL scheme"},
		{"empty --db", []string{"--db", "", "jobs", "list"}, cli.ExitUsage, "--db is empty"},
		{"missing SQLite file", []string{"--db", filepath.Join(t.TempDir(), "none.db"), "jobs", "list"}, cli.ExitFailure, "no database at"},
		{"SQLite file in a missing directory", []string{"--db", "/nonexistent/dir/x.db", "migrate"}, cli.ExitFailure, "cannot open database"},
		{"not a database", []string{"--db", notADB, "jobs", "list"}, cli.ExitFailure, "not a database"},
		{"invalid JSON args", []string{"enqueue", "leasehold.sleep", "--args", "{bad"}, cli.ExitUsage, "--args is not valid JSON"},
		{"JSON args not an object", []string{"enqueue", "leasehold.sleep", "--args", "[1, 2]"}, cli.ExitUsage, "must be a JSON object"},
		{"invalid JSON metadata", []string{"enqueue", "leasehold.sleep", "--metadata", "nope"}, cli.ExitUsage, "--metadata is not valid JSON"},
		{"bad kind", []string{"enqueue", "no spaces please"}, cli.ExitUsage, "invalid job kind"},
		{"bad queue", []string{"enqueue", "leasehold.sleep", "--queue", "a b"}, cli.ExitUsage, `--queue: "a b": ' ' at byte 1`},
		{"bad work queue", []string{"work", "--queue", "a b"}, cli.ExitUsage, `--queue: "a b": ' ' at byte 1`},
		{"bad reconcile queue", []string{"work", "--reconcile-into", "a b"}, cli.ExitUsage, `--reconcile-into: "a b": ' ' at byte 1`},
		{"bad watch queue", []string{"watch", "--once", "--flag-stuck", "a b"}, cli.ExitUsage, `--flag-stuck: "a b": ' ' at byte 1`},
		{"bad periodic schedule", []string{"work", "--periodic", "tick=61 * * * *:leasehold.sleep"}, cli.ExitUsage, `--periodic: invalid schedule`},
		{"unique window without key", []string{"enqueue", "leasehold.sleep", "--unique-window", "1h"}, cli.ExitUsage, "--unique-window needs --unique-key"},
		{"unique scope without key", []string{"enqueue", "leasehold.sleep", "--unique-while-unfinished"}, cli.ExitUsage, "--unique-while-unfinished needs --unique-key"},
		{"negative unique window", []string{"enqueue", "leasehold.sleep", "--unique-key", "k", "--unique-window", "-1m"}, cli.ExitUsage, "negative duration -1m"},
		{"unique window too short", []string{"enqueue", "leasehold.sleep", "--unique-key", "k", "--unique-window", "500us"}, cli.ExitUsage, "--unique-window 500µs is too short"},
		{"unique window of microsecond fractions", []string{"enqueue", "leasehold.sleep", "--unique-key", "k", "--unique-window", "1ms500ns"}, cli.ExitUsage, "--unique-window 1.0005ms is not a whole number of microseconds"},
		{"priority out of range", []string{"enqueue", "leasehold.sleep", "--priority", "-1"}, cli.ExitUsage, "--priority -1 is out of range"},
		{"max attempts out of range", []string{"enqueue", "leasehold.sleep", "--max-attempts", "0"}, cli.ExitUsage, "--max-attempts 0 is out of range"},
		{"negative run-at", []string{"enqueue", "leasehold.sleep", "--run-at", "-5m"}, cli.ExitUsage, "negative duration"},
		{"absurd run-at", []string{"enqueue", "leasehold.sleep", "--run-at", "9999-01-01T00:00:00Z"}, cli.ExitUsage, "too far ahead"},
		{"garbage run-at", []string{"enqueue", "leasehold.sleep", "--run-at", "tomorrow"}, cli.ExitUsage, "invalid run-at"},
		{"negative duration", []string{"purge", "--older-than", "-5m"}, cli.ExitUsage, "negative duration"},
		{"absurd duration", []string{"purge", "--older-than", "100000d"}, cli.ExitUsage, "too long"},
		{"huge duration", []string{"purge", "--older-than", "9999999999h"}, cli.ExitUsage, "too long"},
		{"garbage duration", []string{"purge", "--older-than", "soon"}, cli.ExitUsage, "invalid duration"},
		{"missing duration", []string{"purge"}, cli.ExitUsage, `"older-than" not set (see leasehold purge --help)`},
		{"TTL too short", []string{"work", "--ttl", "0s"}, cli.ExitUsage, "too short"},
		{"metrics port out of range", []string{"work", "--metrics-addr", "127.0.0.1:99999"}, cli.ExitUsage, `--metrics-addr "127.0.0.1:99999": want host:port with a port from 0 to 65535`},
		{"metrics address without port", []string{"work", "--metrics-addr", "nope"}, cli.ExitUsage, `--metrics-addr "nope": want host:port`},
		{"metrics address in use", []string{"work", "--metrics-addr", busy}, cli.ExitFailure, "--metrics-addr: listen tcp"},
		{"unknown status", []string{"jobs", "list", "--status", "pending,bogus"}, cli.ExitUsage, `unknown status "bogus"`},
		{"bad limit", []string{"jobs", "list", "--limit", "0"}, cli.ExitUsage, "--limit 0 is out of range"},
		{"no bench jobs", []string{"bench", "--jobs", "0"}, cli.ExitUsage, "--jobs 0 must be positive"},
		{"negative bench rate", []string{"bench", "--rate", "-5"}, cli.ExitUsage, "--rate -5 must be positive"},
		{"no chaos workers", []string{"chaos", "--workers", "0"}, cli.ExitUsage, "--workers 0 must be positive"},
		{"no hosts jobs", []string{"hosts", "--jobs", "0"}, cli.ExitUsage, "--jobs 0 must be positive"},
		{"bad job id", []string{"jobs", "show", "abc"}, cli.ExitUsage, `invalid job id "abc"`},
		{"unknown job id", []string{"jobs", "show", "999999"}, cli.ExitNotFound, "job 999999 not found"},
		{"retry unknown job", []string{"jobs", "retry", "999999"}, cli.ExitNotFound, "job 999999 not found"},
		{"cancel unknown job", []string{"jobs", "cancel", "999999"}, cli.ExitNotFound, "job 999999 not found"},
		{"forget unknown schedule", []string{"periodic", "forget", "nosuch"}, cli.ExitNotFound, "no schedule nosuch recorded"},
		{"missing argument", []string{"jobs", "show"}, cli.ExitUsage, "takes ID"},
		{"extra argument", []string{"queues", "now"}, cli.ExitUsage, "takes no arguments"},
		{"unknown command", []string{"frobnicate"}, cli.ExitUsage, `unknown command "frobnicate"`},
		{"unknown jobs command", []string{"jobs", "frobnicate"}, cli.ExitUsage, `unknown command "frobnicate"`},
		{"unknown periodic command", []string{"periodic", "forgt", "nightly"}, cli.ExitUsage, `unknown command "forgt"`},
		{"unknown flag", []string{"jobs", "list", "--frobnicate"}, cli.ExitUsage, "unknown flag: --frobnicate"},
		{"bad flag value", []string{"jobs", "list", "--limit", "many"}, cli.ExitUsage, `--limit "many": want a whole number`},
		{"flag value out of range", []string{"jobs", "list", "--after", "99999999999999999999"}, cli.ExitUsage, `--after "99999999999999999999": out of range`},
		{"bad boolean", []string{"jobs", "list", "--json=maybe"}, cli.ExitUsage, `--json "maybe": want true or false`},
		{"demo payments out of range", []string{"demo", "--payments", "0"}, cli.ExitUsage, "--payments 0 is out of range"},
		{"bench count not positive", []string{"bench", "--ceiling-rounds", "-1"}, cli.ExitUsage, "--ceiling-rounds -1 must be positive"},
		{"bench unknown phase", []string{"bench", "--phases", "drain,bogus"}, cli.ExitUsage, `unknown phase "bogus"`},
		{"chaos unknown network mode", []string{"chaos", "--net-mode", "bogus"}, cli.ExitUsage, `--net-mode "bogus"`},
		{"help on an unknown topic", []string{"help", "bogus"}, cli.ExitUsage, `unknown help topic "bogus"`},
	}
	forEachDB(t, func(t *testing.T, db string) {
		for _, c := range cases {
			r := lh(t, db, c.args...)
			checkOneLineError(t, c.name, r, c.code, c.want)
		}
	})
}

// busyAddr returns a loopback address that a listener of the test holds
// until it ends.
func busyAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	return ln.Addr().String()
}

func checkOneLineError(t *testing.T, name string, r result, code int, want string) {
	t.Helper()
	switch {
	case r.code != code:
		t.Errorf("%s: exit code %d, want %d\n%s", name, r.code, code, r)
	case !strings.HasPrefix(r.stderr, "leasehold: ") || strings.Count(r.stderr, "\n") != 1:
		t.Errorf("%s: stderr is not one line starting with \"leasehold: \":\n%s", name, r.stderr)
	case strings.Count(r.stderr, "leasehold: ") != 1:
		t.Errorf("%s: stderr repeats the \"leasehold: \" prefix: %q", name, r.stderr)
	case !strings.Contains(r.stderr, want):
		t.Errorf("%s: stderr %q lacks %q", name, r.stderr, want)
	case strings.Contains(r.stderr, "goroutine") || strings.Contains(r.stderr, "panic") || strings.Contains(r.stderr, "s3cret"):
		t.Errorf("%s: stderr shows a stack, a panic or a password: %q", name, r.stderr)
	case r.stdout != "":
		t.Errorf("%s: stdout is not empty: %q", name, r.stdout)
	}
}

// TestServerRefused: a PostgreSQL server that was reached and refused the
// session is not reported as unreachable: the missing database or role is
// named, the exit code stays 1 and the password stays masked.
func TestServerRefused(t *testing.T) {
	base, err := url.Parse(testdb.PostgresURL(t))
	if err != nil {
		t.Fatal(err)
	}
	noDB := *base
	noDB.Path = "/leasehold_nosuchdb"
	noRole := *base
	noRole.User = url.UserPassword("leasehold_nosuchrole", "s3cret")
	for _, c := range []struct {
		name string
		u    *url.URL
		want string
	}{
		{"unknown database", &noDB, `database "leasehold_nosuchdb" does not exist on the server of postgres://`},
		{"unknown role", &noRole, `role "leasehold_nosuchrole" does not exist on the server of postgres://leasehold_nosuchrole:xxxxx@`},
	} {
		r := runIn(t, "", nil, "--db", c.u.String(), "queues")
		checkOneLineError(t, c.name, r, cli.ExitFailure, c.want)
		if strings.Contains(r.stderr, "cannot reach") {
			t.Errorf("%s: a server that answered is called unreachable: %s", c.name, r.stderr)
		}
	}
}
