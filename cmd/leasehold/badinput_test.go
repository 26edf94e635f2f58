package main

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
)

// TestInputNoDatabaseStores: text and JSON that PostgreSQL cannot store
// (a command line cannot carry a NUL byte, but JSON can escape one) are
// refused the same way on both databases: exit code 2, one line naming the
// flag, no SQL error, nothing enqueued.
func TestInputNoDatabaseStores(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"escaped NUL in args", []string{"enqueue", "leasehold.sleep", "--args", `{"d":"\u0000"}`}, `--args: kind leasehold.sleep: \u0000 (NUL) in a string at byte 6`},
		{"escaped NUL in metadata", []string{"enqueue", "leasehold.sleep", "--metadata", `{"\u0000":1}`}, `--metadata: \u0000 (NUL)`},
		{"invalid UTF-8 in args", []string{"enqueue", "leasehold.sleep", "--args", "{\"d\":\"\xff\"}"}, "--args: kind leasehold.sleep: invalid UTF-8 in a string"},
		{"invalid UTF-8 in unique key", []string{"enqueue", "leasehold.sleep", "--unique-key", "k\xff"}, `--unique-key: "k\xff": invalid UTF-8 at byte 1`},
		{"escape sequence in unique key", []string{"enqueue", "leasehold.sleep", "--unique-key", "k\x1b[31m"}, "--unique-key: \"k\\x1b[31m\": control character U+001B"},
		{"invalid UTF-8 in queue", []string{"enqueue", "leasehold.sleep", "--queue", "q\xff"}, `--queue: "q\xff": invalid UTF-8`},
		{"invalid UTF-8 owner filter", []string{"jobs", "list", "--owner", "w\xff"}, `--owner: "w\xff": invalid UTF-8`},
	}
	forEachDB(t, func(t *testing.T, db string) {
		for _, c := range cases {
			checkOneLineError(t, c.name, lh(t, db, c.args...), cli.ExitUsage, c.want)
		}
		checkList(t, db, nil)
	})
}

// TestBadFlagsCreateNothing: a command that would create its database
// (work, bench, hosts) refuses a bad flag value with exit code 2, naming
// the flag, before it opens the database: no file is left behind. So do
// the others, for a flag given with an empty value (such as
// --provider="$URL" with URL unset), which would otherwise mean the
// flag's default: an in-process provider stand-in, no filter, no key.
func TestBadFlagsCreateNothing(t *testing.T) {
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"work: a provider URL that is not http", []string{"work", "--provider", "ftp://x"}, "--provider: "},
		{"work: an owner with a control character", []string{"work", "--owner", "a\x1bb"}, `--owner: "a\x1bb"`},
		{"work: a periodic name with a space", []string{"work", "--periodic", "bad name=@every 1s:leasehold.sleep"}, `--periodic: "bad name"`},
		{"work: a metrics host that does not resolve", []string{"work", "--metrics-addr", "256.0.0.1:9090"}, "--metrics-addr: "},
		{"work: an unknown kind", []string{"work", "--kind", "nope"}, "--kind: "},
		{"work: no queue", []string{"work", "--queue="}, "--queue is empty"},
		{"queues: a mistyped subcommand", []string{"queues", "pasue", "default"}, `unknown command "pasue" for "leasehold queues"`},
		{"bench: no phase", []string{"bench", "--phases="}, "--phases is empty"},
		{"bench: a malformed held transaction", []string{"bench", "--hold-tx", "garbage"}, "want START:DURATION"},
		{"bench: a report that is a directory", []string{"bench", "--from", t.TempDir()}, "--from: "},
		{"hosts: port 0", []string{"hosts", "--port", "0"}, "--port 0: want a port from 1 to 65535"},
		{"hosts: 65 processes", []string{"hosts", "--procs", "1,65"}, "--procs 65: want process counts from 1 to 64"},
		{"work: an empty provider", []string{"work", "--provider="}, "--provider is empty"},
		{"work: an empty kind list", []string{"work", "--kind", " , "}, "--kind is empty"},
		{"work: an empty owner", []string{"work", "--owner", " "}, "--owner is empty"},
		{"work: an empty reconcile queue", []string{"work", "--reconcile-into="}, "--reconcile-into is empty"},
		{"enqueue: empty metadata", []string{"enqueue", "x", "--metadata="}, "--metadata is empty"},
		{"enqueue: an empty unique key", []string{"enqueue", "x", "--unique-key", " "}, "--unique-key is empty"},
		{"enqueue: an empty run-at", []string{"enqueue", "x", "--run-at="}, "--run-at is empty"},
		{"jobs list: an empty kind", []string{"jobs", "list", "--kind="}, "--kind is empty"},
		{"jobs list: no status", []string{"jobs", "list", "--status="}, "--status is empty"},
		{"jobs stuck: an empty queue", []string{"jobs", "stuck", "--queue="}, "--queue is empty"},
		{"watch: no queue to flag", []string{"watch", "--once", "--flag-stuck="}, "--flag-stuck is empty"},
		{"serve: no queue to reconcile", []string{"serve", "--reconcile="}, "--reconcile is empty"},
	}
	for _, c := range cases {
		path := filepath.Join(t.TempDir(), "never.db")
		checkOneLineError(t, c.name, lh(t, "sqlite:"+path, c.args...), cli.ExitUsage, c.want)
		if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s: the database file was created (stat: %v)", c.name, err)
		}
	}
}

// TestDatabaseTargetRefusals: a blank $LEASEHOLD_DATABASE_URL (spaces, or
// set but empty: "$PROD_URL" with PROD_URL unset), a path that
// is a directory and an SQLite path with a query are refused with one line,
// and nothing is created; a file that is not a database is refused with one
// line that names it once, and by chaos before it prints anything.
func TestDatabaseTargetRefusals(t *testing.T) {
	dir := t.TempDir()
	r := runIn(t, dir, []string{cli.EnvDatabaseURL + "=  "}, "migrate")
	checkOneLineError(t, "blank $"+cli.EnvDatabaseURL, r, cli.ExitUsage, "is set but blank: unset it, or name a database")
	for _, cmd := range []string{"migrate", "work"} {
		r := runIn(t, dir, []string{cli.EnvDatabaseURL + "="}, cmd)
		checkOneLineError(t, "empty $"+cli.EnvDatabaseURL+" for "+cmd, r, cli.ExitUsage, "is set but blank: unset it, or name a database")
	}
	checkOneLineError(t, "a directory", lh(t, dir, "queues"), cli.ExitFailure, dir+" is a directory, not a database file")
	withQuery := "sqlite:" + filepath.Join(dir, "q.db") + "?mode=ro"
	checkOneLineError(t, "a query", lh(t, withQuery, "migrate"), cli.ExitUsage, "an SQLite path takes no query parameters")
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
		t.Errorf("%s after the refusals: %v (%v), want it empty", dir, entries, err)
	}
	notDB := filepath.Join(t.TempDir(), "notes.db")
	if err := os.WriteFile(notDB, []byte("not a database, but long enough to have a header's size at least"), 0o600); err != nil {
		t.Fatal(err)
	}
	r = lh(t, notDB, "queues")
	checkOneLineError(t, "a file that is not a database", r, cli.ExitFailure, notDB+" is not an SQLite database")
	if n := strings.Count(r.stderr, notDB); n != 1 {
		t.Errorf("the refusal of a file that is not a database names it %d times, want once: %s", n, r.stderr)
	}
	r = lh(t, "sqlite:"+notDB, "chaos")
	checkOneLineError(t, "chaos on an existing file", r, cli.ExitUsage, "chaos needs a new SQLite file")
	if r.stdout != "" {
		t.Errorf("chaos printed before refusing an existing file:\n%s", r.stdout)
	}
}
