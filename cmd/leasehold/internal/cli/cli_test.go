package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/leasehold/leasehold"
)

func TestParseTarget(t *testing.T) {
	cases := []struct {
		in      string
		dialect Dialect
		path    string
		code    int // 0: no error
	}{
		{"", SQLite, DefaultPath, 0},
		{"jobs.db", SQLite, "jobs.db", 0},
		{"/var/lib/app/jobs.db", SQLite, "/var/lib/app/jobs.db", 0},
		{"sqlite:jobs.db", SQLite, "jobs.db", 0},
		{"sqlite:///tmp/jobs.db", SQLite, "/tmp/jobs.db", 0},
		{"file:jobs.db", SQLite, "jobs.db", 0},
		{"postgres://u@localhost/app", Postgres, "", 0},
		{"postgresql://u:pw@localhost:5433/app?sslmode=disable", Postgres, "", 0},
		{"POSTGRES://u@localhost/app", Postgres, "", 0},
		{"sqlite:", "", "", ExitUsage},
		{"sqlite:/tmp/jobs.db?mode=ro", "", "", ExitUsage},
		{"file:jobs.db?cache=shared", "", "", ExitUsage},
		{"mysql://localhost/app", "", "", ExitUsage},
		{"postgres://u@localhost:port/app", "", "", ExitUsage},
		{"postgres://u@[::1/app", "", "", ExitUsage},
	}
	for _, c := range cases {
		got, err := ParseTarget(c.in)
		if c.code != 0 {
			if ExitCode(err) != c.code {
				t.Errorf("ParseTarget(%q) error = %v (exit %d), want exit %d", c.in, err, ExitCode(err), c.code)
			}
			continue
		}
		if err != nil || got.Dialect != c.dialect || got.Path != c.path {
			t.Errorf("ParseTarget(%q) = %+v, %v; want %s %q", c.in, got, err, c.dialect, c.path)
		}
	}
}

func TestTargetStringHidesPassword(t *testing.T) {
	tg, err := ParseTarget("postgres://app:hunter2@db:5432/app")
	if err != nil {
		t.Fatal(err)
	}
	if s := tg.String(); strings.Contains(s, "hunter2") || !strings.Contains(s, "app:xxxxx@db") {
		t.Errorf("String() = %q", s)
	}
	if _, err := ParseTarget("postgres://app:hunter2@db:port/app"); err == nil || strings.Contains(err.Error(), "hunter2") {
		t.Errorf("malformed URL error shows the password: %v", err)
	}
}

func TestParseDuration(t *testing.T) {
	cases := []struct {
		in   string
		want time.Duration
		ok   bool
	}{
		{"90s", 90 * time.Second, true},
		{"0s", 0, true},
		{"1.5h", 90 * time.Minute, true},
		{"7d", 7 * Day, true},
		{"1.5d", 36 * time.Hour, true},
		{"2d12h", 60 * time.Hour, true},
		{"3650d", 3650 * Day, true},
		{"3651d", 0, false},
		{"-5m", 0, false},
		{"-1d", 0, false},
		{"1d-5h", 0, false},
		{"", 0, false},
		{"soon", 0, false},
		{"NaNd", 0, false},
		{"1e300d", 0, false},
		{"9999999999h", 0, false},
	}
	for _, c := range cases {
		got, err := ParseDuration(c.in, 0, 3650*Day)
		if c.ok != (err == nil) || got != c.want {
			t.Errorf("ParseDuration(%q) = %v, %v; want %v ok=%v", c.in, got, err, c.want, c.ok)
		}
		if err != nil && ExitCode(err) != ExitUsage {
			t.Errorf("ParseDuration(%q) error has exit code %d", c.in, ExitCode(err))
		}
	}
}

// TestParseDurationSaturates: a day count or a sum beyond what a Duration
// holds is "too long" (or too short when negative), never wrapped around
// into a negative or a small duration.
func TestParseDurationSaturates(t *testing.T) {
	for _, in := range []string{"1000000d", "106752d", "106751d24h", "106751d2562047h", "99999999h", "1d99999999h", "9223372036854775808ns"} {
		_, err := ParseDuration(in, 0, 3650*Day)
		if err == nil || !strings.Contains(err.Error(), "too long") {
			t.Errorf("ParseDuration(%q) = %v, want too long", in, err)
		}
	}
	for _, in := range []string{"-1000000d", "-99999999h"} {
		if _, err := ParseDuration(in, 0, 3650*Day); err == nil || !strings.Contains(err.Error(), "negative") {
			t.Errorf("ParseDuration(%q) = %v, want negative", in, err)
		}
	}
	for _, in := range []string{"99999999", "1hh", "h", "1.2.3s"} {
		if _, err := ParseDuration(in, 0, 3650*Day); err == nil || !strings.Contains(err.Error(), "invalid duration") {
			t.Errorf("ParseDuration(%q) = %v, want invalid duration", in, err)
		}
	}
}

func FuzzParseDuration(f *testing.F) {
	for _, s := range []string{"90s", "7d", "2d12h", "-1d", "1e300d", "d", "5"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDuration(s, time.Second, 3650*Day)
		if err == nil && (d < time.Second || d > 3650*Day) {
			t.Fatalf("ParseDuration(%q) = %v outside the bounds", s, d)
		}
	})
}

func TestFormatDuration(t *testing.T) {
	cases := map[time.Duration]string{
		0:                                     "0s",
		time.Nanosecond:                       "1ns",
		250 * time.Microsecond:                "250µs",
		250 * time.Millisecond:                "250ms",
		1500 * time.Millisecond:               "1.5s",
		90 * time.Second:                      "1m30s",
		2 * time.Minute:                       "2m",
		59*time.Minute + 59*time.Second:       "1h",
		3*time.Hour + 5*time.Minute:           "3h5m",
		50*time.Hour + 10*time.Minute:         "2d2h",
		-3 * time.Second:                      "-3s",
		7 * Day:                               "7d",
		36*time.Hour + 29*time.Minute:         "1d12h",
		10*time.Minute + 29*time.Second:       "10m",
		9*time.Minute + 59*time.Second:        "9m59s",
		24*time.Hour - 20*time.Second:         "1d",
		48*time.Hour - 10*time.Millisecond:    "2d",
		47*time.Hour + 40*time.Minute:         "2d",
		60*time.Second - 30*time.Millisecond:  "1m",
		time.Second - 400*time.Microsecond:    "1s",
		10*time.Minute - 400*time.Millisecond: "10m",
		2*time.Hour + 59*time.Minute + 1:      "2h59m",
	}
	for d, want := range cases {
		if got := FormatDuration(d); got != want {
			t.Errorf("FormatDuration(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestParseRunAt(t *testing.T) {
	now := time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)
	at, in, err := ParseRunAt("2030-01-02T15:04:05Z", now)
	if err != nil || !at.Equal(time.Date(2030, 1, 2, 15, 4, 5, 0, time.UTC)) || in != 0 {
		t.Errorf("RFC 3339 = %v, %v, %v", at, in, err)
	}
	if at, in, err = ParseRunAt("+15m", now); err != nil || !at.IsZero() || in != 15*time.Minute {
		t.Errorf("delay = %v, %v, %v", at, in, err)
	}
	for _, bad := range []string{"-5m", "tomorrow", "2999-01-01T00:00:00Z", "1900-01-01T00:00:00Z", "1970-01-01T00:30:00+01:00", "4000d"} {
		if _, _, err := ParseRunAt(bad, now); ExitCode(err) != ExitUsage {
			t.Errorf("ParseRunAt(%q) = %v, want a usage error", bad, err)
		}
	}
}

func TestParseStates(t *testing.T) {
	got, err := ParseStates("pending, Processing,,stuck")
	if err != nil || fmt.Sprint(got) != "[pending processing stuck]" {
		t.Errorf("ParseStates = %v, %v", got, err)
	}
	if _, err := ParseStates("pending,done"); ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), `"done"`) {
		t.Errorf("unknown status error = %v", err)
	}
}

func TestExitCodeAndMessage(t *testing.T) {
	cases := []struct {
		err  error
		code int
		msg  string
	}{
		{nil, ExitOK, ""},
		{fmt.Errorf("leasehold: get job 4: %w", leasehold.ErrJobNotFound), ExitNotFound, "leasehold: get job 4: job not found"},
		{fmt.Errorf("leasehold: insert: %w", leasehold.ErrInvalidArgs), ExitUsage, ""},
		{Usagef("bad\nflag"), ExitUsage, "leasehold: bad flag"},
		{errors.New("sqlitedriver: list jobs: no such table: leasehold_jobs"), ExitFailure, "run `leasehold migrate` first"},
		{errors.New("boom"), ExitFailure, "leasehold: boom"},
	}
	for _, c := range cases {
		if got := ExitCode(c.err); got != c.code {
			t.Errorf("ExitCode(%v) = %d, want %d", c.err, got, c.code)
		}
		if c.err != nil && c.msg != "" && !strings.Contains(Message(c.err), c.msg) {
			t.Errorf("Message(%v) = %q, want it to contain %q", c.err, Message(c.err), c.msg)
		}
	}
}

// TestFlagError: a library refusal of a flag's value reads as the flag and
// the reason, with one "leasehold: " prefix, and is still the library's
// error for errors.Is; other errors keep their text after the flag.
func TestFlagError(t *testing.T) {
	err := FlagError("--queue", leasehold.ValidateQueue("a b"))
	msg := Message(err)
	if ExitCode(err) != ExitUsage || !errors.Is(err, leasehold.ErrInvalidQueue) ||
		!strings.HasPrefix(msg, `leasehold: --queue: "a b": ' ' at byte 1 (want`) || strings.Count(msg, "leasehold: ") != 1 {
		t.Errorf("FlagError(--queue, a b) = %q (exit %d)", msg, ExitCode(err))
	}
	if err := FlagError("--kind", errors.New("not built in")); Message(err) != "leasehold: --kind: not built in" {
		t.Errorf("FlagError(--kind) = %q", Message(err))
	}
	fields := FieldFlags{"queue": "--queue"}
	if err := fields.Restate(leasehold.ValidateQueue("")); !strings.HasPrefix(Message(err), "leasehold: --queue: ") {
		t.Errorf("FieldFlags.Restate(queue) = %q", Message(err))
	}
	if err := fields.Restate(leasehold.ValidateKind("")); strings.Contains(Message(err), "--queue") {
		t.Errorf("FieldFlags.Restate(kind) = %q, want the library's message", Message(err))
	}
}

// TestCheckAddr: an address to listen on is host:port with a port number
// in range (or a service name); anything else is a usage error.
func TestCheckAddr(t *testing.T) {
	for _, addr := range []string{"127.0.0.1:0", ":8080", "[::1]:65535", "localhost:http"} {
		if err := CheckAddr("--addr", addr); err != nil {
			t.Errorf("CheckAddr(%q) = %v", addr, err)
		}
	}
	for _, addr := range []string{"nope", "127.0.0.1:99999", "127.0.0.1:-1", "127.0.0.1:nosuchservice"} {
		if err := CheckAddr("--addr", addr); ExitCode(err) != ExitUsage || !strings.Contains(err.Error(), "--addr") {
			t.Errorf("CheckAddr(%q) = %v, want a usage error naming --addr", addr, err)
		}
	}
}

// TestServerRefused: each refusal of a PostgreSQL server that answered
// says what the server said, not that it could not be reached; other
// errors are left to the caller.
func TestServerRefused(t *testing.T) {
	tg := Target{Dialect: Postgres, URL: "postgres://app:hunter2@db:5432/app"}
	connect := func(code, msg string) error {
		return fmt.Errorf("pgdriver: now: failed to connect: %w", &pgconn.PgError{Severity: "FATAL", Code: code, Message: msg})
	}
	for _, c := range []struct {
		err  error
		want string
	}{
		{connect("3D000", `database "app" does not exist`), `database "app" does not exist on the server of postgres://app:xxxxx@db:5432/app (SQLSTATE 3D000)`},
		{connect("28000", `role "app" does not exist`), `role "app" does not exist on the server of postgres://app:xxxxx@db:5432/app (SQLSTATE 28000)`},
		{connect("28P01", `password authentication failed for user "app"`),
			`the server of postgres://app:xxxxx@db:5432/app refused the login: password authentication failed for user "app" (SQLSTATE 28P01)`},
		{connect("53300", "sorry, too many clients already"), "answered with an error: sorry, too many clients already (SQLSTATE 53300)"},
	} {
		err := serverRefused(tg, c.err)
		if err == nil || ExitCode(err) != ExitFailure || !strings.Contains(Message(err), c.want) || strings.Contains(Message(err), "hunter2") {
			t.Errorf("serverRefused(%v) = %v, want exit 1 and %q", c.err, err, c.want)
		}
	}
	if err := serverRefused(tg, errors.New("dial tcp: connection refused")); err != nil {
		t.Errorf("serverRefused(a dial error) = %v, want nil", err)
	}
}

// TestTableEscapesControlCharacters: text from a job (an error message,
// say) cannot reach the operator's terminal as escape sequences.
func TestTableEscapesControlCharacters(t *testing.T) {
	var buf bytes.Buffer
	tb := NewTable(&buf, "ERROR")
	tb.Row("\x1b]0;owned\a\x1b[2J\x1b[31mALL GOOD\x1b[0m\tnext\u009bline")
	if err := tb.Flush(); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, r := range out {
		if r != '\n' && unicode.IsControl(r) {
			t.Fatalf("table output holds control character %U: %q", r, out)
		}
	}
	if want := `\x1b]0;owned\x07\x1b[2J\x1b[31mALL GOOD\x1b[0m next\x9bline`; !strings.Contains(out, want) {
		t.Fatalf("table output %q lacks %q", out, want)
	}
}

// TestMessageEscapesControlCharacters: an error that quotes input raw
// (a third-party parser's, say) reaches stderr as one line with its
// control characters escaped, as in a table.
func TestMessageEscapesControlCharacters(t *testing.T) {
	err := errors.New("leasehold: --periodic: bad location \x1b]0;owned\a\x1b[2J\r\nnext\u009bline")
	got := Message(err)
	if want := `leasehold: --periodic: bad location \x1b]0;owned\x07\x1b[2J next\x9bline`; got != want {
		t.Errorf("Message = %q, want %q", got, want)
	}
}

// TestWriteJSONBounded: WriteJSON indents as json.Encoder with SetIndent
// does, HTML escaped, except a value holding JSON nested too deep to
// indent within a bound, which it writes compacted rather than a
// thousand times its size.
func TestWriteJSONBounded(t *testing.T) {
	v := map[string]any{"a": []int{1, 2}, "h": "<b>&", "e": map[string]any{}}
	var want, got bytes.Buffer
	enc := json.NewEncoder(&want)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	if err := WriteJSON(&got, v); err != nil {
		t.Fatal(err)
	}
	if got.String() != want.String() {
		t.Errorf("WriteJSON = %q, want %q", got.String(), want.String())
	}
	nested := strings.Repeat("[", 990) + strings.Repeat("]", 990)
	deep := json.RawMessage(`{"a":[` + strings.Repeat(nested+",", 99) + nested + `]}`)
	got.Reset()
	if err := WriteJSON(&got, struct{ Args json.RawMessage }{deep}); err != nil {
		t.Fatal(err)
	}
	if got.Len() > 2*len(deep) || !json.Valid(got.Bytes()) {
		t.Errorf("WriteJSON of %d bytes nested 990 deep wrote %d bytes (valid JSON: %v)", len(deep), got.Len(), json.Valid(got.Bytes()))
	}
}

// TestParseJSONObject: --args and --metadata take any JSON object the
// library takes, numbers past float64's range included (the library
// checks their range itself), and refuse what is not JSON or not an
// object.
func TestParseJSONObject(t *testing.T) {
	for _, s := range []string{`{}`, `{"n":1e400}`, `{"n":-1e-400,"m":[1e308, 12345678901234567890123]}`, " {\"a\":1} "} {
		if got, err := ParseJSONObject("--args", s); err != nil || string(got) != s {
			t.Errorf("ParseJSONObject(%q) = %q, %v; want it back", s, got, err)
		}
	}
	for s, want := range map[string]string{
		`{"a":`: "--args is not valid JSON", `[1]`: "must be a JSON object", `1e400`: "must be a JSON object",
		`null`: "must be a JSON object", `{"a":1} {}`: "is not valid JSON", ``: "is not valid JSON",
	} {
		if _, err := ParseJSONObject("--args", s); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseJSONObject(%q) = %v, want an error saying %q", s, err, want)
		}
	}
}

// TestParseTargetRefusesKeywordDSN: a libpq keyword/value connection
// string is refused, without its text (and password) in the error,
// instead of being taken for an SQLite file's name; sqlite:PATH still
// names such a file when that is meant.
func TestParseTargetRefusesKeywordDSN(t *testing.T) {
	for _, s := range []string{"host=localhost password=hunter2 dbname=app", "dbname=app", " user = ops port=5432"} {
		_, err := ParseTarget(s)
		if err == nil || !strings.Contains(err.Error(), "postgres:// URL") || strings.Contains(err.Error(), "hunter2") {
			t.Errorf("ParseTarget(%q) = %v, want a usage error pointing at postgres:// URLs, without the password", s, err)
		}
	}
	for _, s := range []string{"sqlite:host=x.db", "jobs.db", "./data/user-queue.db"} {
		if tg, err := ParseTarget(s); err != nil || tg.Dialect != SQLite {
			t.Errorf("ParseTarget(%q) = %+v, %v; want an SQLite file", s, tg, err)
		}
	}
}
