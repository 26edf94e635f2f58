package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
)

// pgxURLCases are PostgreSQL URLs read differently by pgx and net/url,
// each with the parts of its secrets that must never be shown.
var pgxURLCases = []struct {
	url    string
	secret []string
}{
	{"postgres://app:2024#Spring@db.example/app", []string{"2024", "Spring"}},
	{"postgres://app:#Spring2024@db.example/app", []string{"Spring2024"}},
	{"postgres://app:2024#Spring@db.example/app?sslmode=disable", []string{"2024", "Spring"}},
	{"postgres://app:2024#Spring@db.example/app?sslmode=disable&", []string{"2024", "Spring"}},
	{"postgres://app:2024#Spring@db.example/app?", []string{"2024", "Spring"}},
	{"postgres://app@db.example/app?password=ab#cd", []string{"ab", "cd"}},
	{"postgres://app@db.example/app?sslmode=disable&password=qz#wv&application_name=lh", []string{"qz", "wv"}},
	{"postgres://app@db.example/app?pass%77ord=ab#cd", []string{"ab", "cd"}},
	{"postgres://app:s3cr%23t@db.example:5432/app?sslmode=disable", []string{"s3cr"}},
	{"postgres://app:x?connect_timeout=3@db.example/app", []string{"x?connect"}},
	{"postgres://app:2024#Spring@db1:5432,db2:5433/app?target_session_attrs=read-write", []string{"2024", "Spring"}},
	{"postgres://app:2024#Spring@[::1]:5432,[::2]:5433/app", []string{"2024", "Spring"}},
	{"postgres://app:pw0rd@[::1]:5432,[::2]:5433/app?sslmode=disable", []string{"pw0rd"}},
	{"postgresql://app:2024#Spring@/app?host=/tmp/pg&port=5441", []string{"2024", "Spring"}},
	{"postgres://app:2024#Spring@db.example/app?connect_timeout=3", []string{"2024", "Spring"}},
	{"postgres://db.example/app", nil},
}

// target returns the Target of a URL: parsed when ParseTarget accepts it,
// built as other packages build one otherwise.
func target(t *testing.T, raw string) Target {
	t.Helper()
	tg, err := ParseTarget(raw)
	if err != nil {
		if ExitCode(err) != ExitUsage {
			t.Fatalf("ParseTarget(%q): %v", raw, err)
		}
		return Target{Dialect: Postgres, URL: raw}
	}
	return tg
}

// TestTargetStringMasksPasswordAsPgxReadsIt: a raw '#' in a password is
// a character of the password for pgx, not the start of a fragment; the
// shown URL hides every part of it and keeps the rest of the text.
func TestTargetStringMasksPasswordAsPgxReadsIt(t *testing.T) {
	for _, c := range pgxURLCases {
		shown := target(t, c.url).String()
		for _, s := range c.secret {
			if strings.Contains(shown, s) {
				t.Errorf("%s shown as %q: shows %q of a password", c.url, shown, s)
			}
		}
		if len(c.secret) > 0 && !strings.Contains(shown, "xxxxx") {
			t.Errorf("%s shown as %q: no mask", c.url, shown)
		}
	}
	for in, want := range map[string]string{
		"postgres://app:2024#Spring@db.example/app?sslmode=disable":        "postgres://app:xxxxx@db.example/app?sslmode=disable",
		"postgres://app@db.example/app?password=ab#cd&sslmode=disable":     "postgres://app@db.example/app?password=xxxxx&sslmode=disable",
		"postgres://app@db/app?sslpassword=k#ey&application_name=a%20b":    "postgres://app@db/app?sslpassword=xxxxx&application_name=a%20b",
		"postgres://app:pw0rd@[::1]:5432,[::2]:5433/app?sslmode=disable":   "postgres://app:xxxxx@[::1]:5432,[::2]:5433/app?sslmode=disable",
		"postgres://app:2024#Spring@db1:5432,db2:5433/app":                 "postgres://app:xxxxx@db1:5432,db2:5433/app",
		"postgres://app@db.example/app":                                    "postgres://app@db.example/app",
		"postgres://app:hunter2@db:5432/app?password=a&password=b#c&x=y#z": "postgres://app:xxxxx@db:5432/app?password=xxxxx&password=xxxxx&x=y#z",
	} {
		if got := target(t, in).String(); got != want {
			t.Errorf("%s shown as %q, want %q", in, got, want)
		}
	}
}

// TestWithConnectTimeoutKeepsWhatPgxReads: the added connect_timeout
// changes nothing else pgx reads from the URL (the password above all),
// and is not added where the URL sets one.
func TestWithConnectTimeoutKeepsWhatPgxReads(t *testing.T) {
	t.Setenv("PGCONNECT_TIMEOUT", "")
	for _, c := range pgxURLCases {
		want, err := pgconn.ParseConfig(c.url)
		if err != nil {
			t.Fatalf("pgx refuses %s: %v", c.url, err)
		}
		rewritten := withConnectTimeout(c.url)
		got, err := pgconn.ParseConfig(rewritten)
		if err != nil {
			t.Errorf("%s rewritten as %q, which pgx refuses: %v", c.url, rewritten, err)
			continue
		}
		if got.Password != want.Password || got.User != want.User || got.Host != want.Host ||
			got.Port != want.Port || got.Database != want.Database || len(got.Fallbacks) != len(want.Fallbacks) {
			t.Errorf("%s rewritten as %q: pgx reads user %q password %q host %q port %d db %q (%d fallbacks), want %q %q %q %d %q (%d)",
				c.url, rewritten, got.User, got.Password, got.Host, got.Port, got.Database, len(got.Fallbacks),
				want.User, want.Password, want.Host, want.Port, want.Database, len(want.Fallbacks))
		}
		wantTimeout := 10 * time.Second
		if want.ConnectTimeout != 0 { // the URL sets one
			wantTimeout = want.ConnectTimeout
			if rewritten != c.url {
				t.Errorf("%s sets connect_timeout, rewritten as %q", c.url, rewritten)
			}
		}
		if got.ConnectTimeout != wantTimeout {
			t.Errorf("%s rewritten as %q: connect timeout %s, want %s", c.url, rewritten, got.ConnectTimeout, wantTimeout)
		}
	}
	t.Setenv("PGCONNECT_TIMEOUT", "4")
	if raw := "postgres://app:2024#Spring@db.example/app"; withConnectTimeout(raw) != raw {
		t.Errorf("PGCONNECT_TIMEOUT set: %q rewritten as %q", raw, withConnectTimeout(raw))
	}
}

// TestParseTargetRefusesKeywordDSNWithoutEcho: keyword/value strings
// never reach withConnectTimeout or String: they are refused, without
// echoing their password.
func TestParseTargetRefusesKeywordDSNWithoutEcho(t *testing.T) {
	for _, raw := range []string{"host=db dbname=app password=2024#Spring", "password='ab#cd' host=db"} {
		_, err := ParseTarget(raw)
		if ExitCode(err) != ExitUsage || strings.Contains(err.Error(), "Spring") || strings.Contains(err.Error(), "cd") {
			t.Errorf("ParseTarget(%q) = %v, want a usage error without the password", raw, err)
		}
	}
}
