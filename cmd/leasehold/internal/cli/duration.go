package cli

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Day is 24 hours, the unit of the "d" suffix ParseDuration accepts.
const Day = 24 * time.Hour

// ParseDuration parses s as a Go duration (90s, 15m, 2h45m) optionally
// preceded by a number of days (7d, 1.5d, 2d12h), and checks that the
// result lies in [lo, hi]: negative and absurdly long durations are
// usage errors.
func ParseDuration(s string, lo, hi time.Duration) (time.Duration, error) {
	d, err := parseDays(strings.TrimSpace(s))
	if err != nil {
		return 0, Usagef("invalid duration %q (want e.g. 500ms, 90s, 15m, 2h, 7d)", s)
	}
	switch {
	case d < 0:
		return 0, Usagef("negative duration %s", s)
	case d < lo:
		return 0, Usagef("duration %s is too short (minimum %s)", s, FormatDuration(lo))
	case d > hi:
		return 0, Usagef("duration %s is too long (maximum %s)", s, FormatDuration(hi))
	}
	return d, nil
}

// goDuration matches what time.ParseDuration parses, whatever its size.
var goDuration = regexp.MustCompile(`^[-+]?((\d+\.?\d*|\.\d+)(ns|us|µs|μs|ms|s|m|h))+$`)

// parseGo is time.ParseDuration, except that a well-formed duration
// beyond what a Duration holds (99999999h) saturates, so that the
// caller's bounds call it too long, where time.ParseDuration calls it
// invalid.
func parseGo(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	switch {
	case err == nil || !goDuration.MatchString(s):
		return d, err
	case strings.HasPrefix(s, "-"):
		return math.MinInt64, nil
	}
	return math.MaxInt64, nil
}

// parseDays parses an optional leading "<n>d" and the Go duration after it.
func parseDays(s string) (time.Duration, error) {
	if s == "" {
		return 0, fmt.Errorf("empty")
	}
	days, rest, found := strings.Cut(s, "d")
	if !found {
		return parseGo(s)
	}
	n, err := strconv.ParseFloat(days, 64)
	if err != nil || n != n { // n != n: NaN
		return 0, fmt.Errorf("bad day count %q", days)
	}
	const maxDays = float64(math.MaxInt64 / Day) // about 292 years
	// Beyond what a Duration holds: let the caller's bounds say so.
	switch {
	case n >= maxDays:
		return math.MaxInt64, nil
	case n <= -maxDays:
		return math.MinInt64, nil
	}
	d := time.Duration(n * float64(Day))
	if rest == "" {
		return d, nil
	}
	if strings.HasPrefix(rest, "-") || strings.HasPrefix(rest, "+") {
		return 0, fmt.Errorf("sign after days")
	}
	r, err := parseGo(rest)
	if err != nil {
		return 0, err
	}
	switch { // the sum saturates rather than wraps around
	case n >= 0 && r > math.MaxInt64-d:
		return math.MaxInt64, nil
	case n < 0 && r > d-math.MinInt64:
		return math.MinInt64, nil
	case n < 0:
		return d - r, nil
	}
	return d + r, nil
}

// FormatDuration renders d compactly: 1.5s, 2m30s, 3h, 2d4h. Each form
// is chosen after rounding d to its unit, so that 59.97s is 1m and
// 47h59m 2d, never 60s or 1d24h.
func FormatDuration(d time.Duration) string {
	neg := d < 0
	if neg {
		d = -d
	}
	s := formatAbs(d)
	if neg {
		return "-" + s
	}
	return s
}

// formatAbs is FormatDuration of d >= 0.
func formatAbs(d time.Duration) string {
	if d < time.Millisecond {
		return d.String() // 1ns, 250µs: not rounded to 0s
	}
	if r := d.Round(time.Millisecond); r < time.Second {
		return r.String()
	}
	if r := d.Round(100 * time.Millisecond); r < time.Minute {
		return strconv.FormatFloat(r.Seconds(), 'f', -1, 64) + "s"
	}
	if r := d.Round(time.Second); r < 10*time.Minute {
		return trimZero(r.String())
	}
	if r := d.Round(time.Minute); r < Day {
		return trimZero(r.String())
	}
	r := d.Round(time.Hour)
	s := strconv.FormatInt(int64(r/Day), 10) + "d"
	if rest := r % Day; rest > 0 {
		s += trimZero(rest.String())
	}
	return s
}

// trimZero drops trailing zero units: "2m0s" -> "2m", "3h0m0s" -> "3h".
func trimZero(s string) string {
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// DurationValue is a pflag.Value for a duration flag bounded by
// ParseDuration's rules.
type DurationValue struct {
	p      *time.Duration
	lo, hi time.Duration
}

// NewDurationValue sets *p to def and returns a flag value that parses
// into p within [lo, hi].
func NewDurationValue(p *time.Duration, def, lo, hi time.Duration) *DurationValue {
	*p = def
	return &DurationValue{p: p, lo: lo, hi: hi}
}

// Set parses s.
func (v *DurationValue) Set(s string) error {
	d, err := ParseDuration(s, v.lo, v.hi)
	if err != nil {
		return err
	}
	*v.p = d
	return nil
}

// String returns the current value; zero is "0", so that help output
// shows no "(default 0s)", as for pflag's own duration flags (a zero
// default is "none", or the flag is required).
func (v *DurationValue) String() string {
	if v.p == nil {
		return ""
	}
	if *v.p == 0 {
		return "0"
	}
	return FormatDuration(*v.p)
}

// Type names the flag's type in help output.
func (v *DurationValue) Type() string { return "duration" }
