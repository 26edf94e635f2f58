package leasehold

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
)

// Schedule says when the slots of a periodic job are. Every process that
// runs a schedule must compute the same slots from it, so Next must
// depend on t alone (not on when the process started, nor on its local
// time zone).
type Schedule interface {
	// Next returns the first slot strictly after t, or the zero time when
	// the schedule never fires again.
	Next(t time.Time) time.Time
	// String describes the schedule; it is recorded with it, for
	// `leasehold periodic list`.
	String() string
}

// MinEvery is the shortest interval Every accepts.
const MinEvery = time.Millisecond

// cronParser parses five fields (minute to day of week), six with a
// leading seconds field, and descriptors (@yearly, @monthly, @weekly,
// @daily, @hourly; @every is handled apart, see Cron).
var cronParser = cron.NewParser(cron.SecondOptional | cron.Minute | cron.Hour |
	cron.Dom | cron.Month | cron.Dow | cron.Descriptor)

// Cron returns the schedule of a cron expression: five fields (minute,
// hour, day of month, month, day of week), six with a leading seconds
// field, or a descriptor (@yearly, @monthly, @weekly, @daily, @hourly,
// @every 10s). Fields are read in loc; a nil loc means UTC, unless the
// expression starts with CRON_TZ=Zone (giving both is an error). The
// default is UTC rather than time.Local so that processes on machines
// set to different zones compute the same slots. In a zone with daylight
// saving time, a wall-clock slot that does not exist on the day clocks
// go forward is skipped (not moved), and one that happens twice when they
// go back fires once, at its first pass: each wall-clock date and time
// fires at most once, so the second pass of the repeated hour has no
// slot at all, even for an expression firing every few minutes (in Paris,
// "0 * * * *" fires at 02:00 summer time, then at 03:00 winter time, two
// hours later; use Every for a fixed interval). "@every D" is Every(D): it
// ignores loc. A bad expression,
// or one that never fires (such as February 30), returns an error
// matching ErrInvalidSchedule.
func Cron(expr string, loc *time.Location) (Schedule, error) {
	expr = strings.TrimSpace(expr)
	if d, ok := strings.CutPrefix(expr, "@every "); ok {
		return parseEvery(expr, d)
	}
	zoned := strings.HasPrefix(expr, "CRON_TZ=") || strings.HasPrefix(expr, "TZ=")
	if zoned && loc != nil {
		return nil, fmt.Errorf("%w: %q names its zone and a location was given too: give one", ErrInvalidSchedule, expr)
	}
	s, err := cronParser.Parse(expr)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %s", ErrInvalidSchedule, expr, escapeControl(err.Error()))
	}
	spec, ok := s.(*cron.SpecSchedule)
	if !ok {
		return nil, fmt.Errorf("%w: %q: unsupported schedule", ErrInvalidSchedule, expr)
	}
	text := expr
	if !zoned {
		if loc == nil {
			loc = time.UTC
		}
		spec.Location = loc
		text = "CRON_TZ=" + loc.String() + " " + expr
	}
	c := &cronSchedule{spec: spec, text: text}
	if c.Next(time.Now()).IsZero() {
		return nil, fmt.Errorf("%w: %q never fires", ErrInvalidSchedule, expr)
	}
	return c, nil
}

// MustCron is Cron for expressions known to be valid: it panics on an
// error.
func MustCron(expr string, loc *time.Location) Schedule {
	s, err := Cron(expr, loc)
	if err != nil {
		panic(err)
	}
	return s
}

// parseEvery parses the duration of "@every D".
func parseEvery(expr, d string) (Schedule, error) {
	dur, err := time.ParseDuration(strings.TrimSpace(d))
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrInvalidSchedule, expr, err)
	}
	s := Every(dur)
	if err := checkSchedule(s); err != nil {
		return nil, err
	}
	return s, nil
}

// cronSchedule is a parsed cron expression.
type cronSchedule struct {
	spec *cron.SpecSchedule
	text string
}

// Next returns the first time after t that matches the expression, once
// for each wall-clock date and time: a match in the second pass of the
// hour that clocks repeat when they go back is skipped, since the same
// wall-clock time matched in the first pass. It depends on t alone.
func (c *cronSchedule) Next(t time.Time) time.Time {
	n := c.spec.Next(t)
	for !n.IsZero() {
		until, repeated := wallRepeatedUntil(n.In(c.spec.Location))
		if !repeated {
			return n
		}
		// Every wall-clock time up to until happened in the first pass:
		// go on from the first one that did not.
		n = c.spec.Next(until.Add(-time.Nanosecond).In(t.Location()))
	}
	return n
}

// wallRepeatedUntil reports whether the wall-clock date and time of t, in
// t's location, already happened before t, because the clocks went back
// less than that change of offset before t; if so, it returns when the
// repeat ends (the first instant whose wall-clock time is new again).
func wallRepeatedUntil(t time.Time) (time.Time, bool) {
	start, _ := t.ZoneBounds()
	if start.IsZero() {
		return time.Time{}, false // UTC, a fixed zone, or no change yet
	}
	_, before := start.Add(-time.Nanosecond).Zone()
	_, after := start.Zone()
	back := time.Duration(before-after) * time.Second
	if until := start.Add(back); back > 0 && t.Before(until) {
		return until, true
	}
	return time.Time{}, false
}

// String returns the expression with its zone (CRON_TZ=Zone ...).
func (c *cronSchedule) String() string { return c.text }

// Every returns a schedule with a slot every d (truncated to whole
// microseconds), aligned to the Unix epoch rather than to when a process
// started, so that every process computes the same slots: Every(time.Hour)
// fires on the hour in UTC, Every(10*time.Second) at :00, :10, :20 and so
// on. It ignores time zones (use Cron for wall-clock times). An interval
// below MinEvery is refused when the schedule is added, with
// ErrInvalidSchedule.
func Every(d time.Duration) Schedule { return every{d: d.Truncate(time.Microsecond)} }

// every is the schedule of Every.
type every struct{ d time.Duration }

// Next returns the first multiple of the interval since the Unix epoch
// after t.
func (e every) Next(t time.Time) time.Time {
	if e.d < MinEvery {
		return time.Time{}
	}
	us := e.d.Microseconds()
	n := t.UnixMicro() / us
	if t.UnixMicro()%us < 0 {
		n-- // floor for times before the epoch
	}
	return time.UnixMicro((n + 1) * us).UTC()
}

// String returns "@every D".
func (e every) String() string { return "@every " + e.d.String() }

// checkSchedule refuses a schedule that cannot be run.
func checkSchedule(s Schedule) error {
	switch v := s.(type) {
	case nil:
		return fmt.Errorf("%w: no schedule", ErrInvalidSchedule)
	case every:
		if v.d < MinEvery {
			return fmt.Errorf("%w: interval %v is below %v", ErrInvalidSchedule, v.d, MinEvery)
		}
	}
	if s.Next(time.Now()).IsZero() {
		return fmt.Errorf("%w: %s never fires", ErrInvalidSchedule, s)
	}
	return nil
}

// Errors of periodic jobs.
var (
	// ErrInvalidSchedule reports a cron expression that does not parse or
	// never fires, or an interval that is too short.
	ErrInvalidSchedule = errors.New("leasehold: invalid schedule")

	// ErrInvalidPeriodic reports a PeriodicJob that cannot run: a bad
	// name, no schedule, no Args function, or Args that return a job the
	// client refuses (the error wraps the refusal too).
	ErrInvalidPeriodic = errors.New("leasehold: invalid periodic job")

	// ErrPeriodicExists reports a periodic job whose name the client
	// already runs.
	ErrPeriodicExists = errors.New("leasehold: periodic job already added")

	// ErrPeriodicNotFound reports RemovePeriodic of a name the client does
	// not run.
	ErrPeriodicNotFound = errors.New("leasehold: no periodic job of that name")
)
