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
	// the schedule never fires again. A slot not after t breaks the
	// contract: AddPeriodic and NewClient refuse such a schedule with
	// ErrInvalidSchedule, and one that breaks it later stops firing, with
	// an error logged.
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
// expression starts with CRON_TZ=Zone or TZ=Zone, followed by its fields
// (giving both is an error). The default is UTC rather than time.Local
// so that processes on machines set to different zones compute the same
// slots; for the same reason the machine's zone is refused, as
// time.Local (or any loc whose String is "Local"), as CRON_TZ=Local or
// TZ=Local, and under the names "localtime" and "posixrules" that zone
// databases link to a zone each machine sets: name the zone instead (time.LoadLocation("Europe/Paris"),
// CRON_TZ=Europe/Paris), so that every process reads the fields in it
// and the recorded spec says which it is. The spec records loc under a
// name that time.LoadLocation loads with loc's offsets, so that it reads
// as the same zone wherever it is parsed again: loc's own name, or, for
// a fixed offset of whole hours (time.FixedZone, whatever name it was
// given), the zone database's name of that offset (Etc/GMT-1 for UTC+1:
// the sign is inverted there); a loc with no such name (a fixed offset
// of +05:30, zone data loaded under a name of its own) is refused with
// ErrInvalidSchedule. In a zone with daylight
// saving time, a wall-clock slot that does not exist on the day clocks
// go forward is skipped (not moved), and one that happens twice when they
// go back fires once, at its first pass: each wall-clock date and time
// fires at most once, so the second pass of the repeated hour has no
// slot at all, even for an expression firing every few minutes (in Paris,
// "0 * * * *" fires at 02:00 summer time, then at 03:00 winter time, two
// hours later; use Every for a fixed interval). "@every D" is Every(D): it
// ignores loc (but time.Local is refused there too). A bad expression
// (a zone with no fields, such as "CRON_TZ=UTC", included), or one that
// never fires (such as February 30), returns an error matching
// ErrInvalidSchedule.
func Cron(expr string, loc *time.Location) (Schedule, error) {
	expr = strings.TrimSpace(expr)
	if isLocal(loc) {
		return nil, fmt.Errorf("%w: %q: the location is the machine's own zone (time.Local), which differs between machines: name the zone, such as time.LoadLocation(\"Europe/Paris\")",
			ErrInvalidSchedule, expr)
	}
	if d, ok := strings.CutPrefix(expr, "@every "); ok {
		return parseEvery(expr, d)
	}
	zoned := strings.HasPrefix(expr, "CRON_TZ=") || strings.HasPrefix(expr, "TZ=")
	if zoned && loc != nil {
		return nil, fmt.Errorf("%w: %q names its zone and a location was given too: give one", ErrInvalidSchedule, expr)
	}
	if zoned && !strings.Contains(expr, " ") { // the parser panics on these
		return nil, fmt.Errorf("%w: %q: a zone and no schedule fields (want CRON_TZ=Zone FIELDS)", ErrInvalidSchedule, expr)
	}
	spec, err := parseCron(expr)
	if err != nil {
		return nil, err
	}
	if zoned && isLocal(spec.Location) {
		return nil, fmt.Errorf("%w: %q reads its fields in the machine's own zone, which differs between machines: name the zone, such as CRON_TZ=Europe/Paris",
			ErrInvalidSchedule, expr)
	}
	text := expr
	if !zoned {
		if loc == nil {
			loc = time.UTC
		}
		zone, err := zoneName(loc)
		if err != nil {
			return nil, fmt.Errorf("%w: %q: %w", ErrInvalidSchedule, expr, err)
		}
		spec.Location = loc
		text = "CRON_TZ=" + zone + " " + expr
	}
	c := newCronSchedule(spec, text)
	if c.Next(time.Now()).IsZero() {
		return nil, fmt.Errorf("%w: %q never fires", ErrInvalidSchedule, expr)
	}
	return c, nil
}

// Bounds of the instants at which zoneName compares a location's offsets
// with those of the zone its name loads.
var (
	zoneCheckFrom = time.Date(1970, 1, 1, 0, 0, 0, 0, time.UTC)
	zoneCheckTo   = time.Date(2200, 1, 1, 0, 0, 0, 0, time.UTC)
)

// zoneName returns the name under which the spec of a cron expression
// read in loc records its zone (CRON_TZ=Zone), so that the spec, parsed
// again (the parser loads Zone with time.LoadLocation), reads its fields
// at the same offsets: loc's own name when it loads a zone with loc's
// offsets (time.LoadLocation("Europe/Paris") and time.UTC do); else, for
// a fixed offset of whole hours (time.FixedZone, whatever name it was
// given: "", "UTC", "CET"), the zone database's Etc/GMT name of that
// offset, whose sign is inverted (UTC+1 is Etc/GMT-1), or UTC. A
// location that neither names itself nor has such an offset (a fixed
// offset of +05:30, a zone loaded under another name) has no spec that
// says it: an error.
func zoneName(loc *time.Location) (string, error) {
	name := loc.String()
	if name != "" && loadsSameZone(name, loc) {
		return name, nil
	}
	_, offset := time.Now().In(loc).Zone()
	if start, end := time.Now().In(loc).ZoneBounds(); start.IsZero() && end.IsZero() { // a fixed offset
		if etc := etcZone(offset); etc != "" && loadsSameZone(etc, loc) {
			return etc, nil
		}
	}
	return "", fmt.Errorf("the location %q (UTC%s now) has no zone database name with its offsets, so the recorded spec (CRON_TZ=Zone) could not say it: "+
		"load the zone by its name (time.LoadLocation(\"Asia/Kolkata\")), or give a fixed offset of whole hours", name, offsetText(offset))
}

// etcZone returns the zone database's name of the fixed offset of
// offset seconds east of UTC, or "" when it has none: UTC, or Etc/GMT-H
// for H hours east (the sign inverted, as POSIX has it), from Etc/GMT+12
// to Etc/GMT-14.
func etcZone(offset int) string {
	switch h := offset / 3600; {
	case offset%3600 != 0 || h < -12 || h > 14:
		return ""
	case h == 0:
		return "UTC"
	default:
		return fmt.Sprintf("Etc/GMT%+d", -h)
	}
}

// loadsSameZone reports whether time.LoadLocation(name) loads a zone
// with loc's offsets, at every instant from 1970 to 2200: it compares
// them at the start of each period of either zone (ZoneBounds).
func loadsSameZone(name string, loc *time.Location) bool {
	loaded, err := time.LoadLocation(name)
	if err != nil {
		return false
	}
	for t := zoneCheckFrom; t.Before(zoneCheckTo); {
		a, b := t.In(loc), t.In(loaded)
		_, offA := a.Zone()
		_, offB := b.Zone()
		if offA != offB {
			return false
		}
		_, endA := a.ZoneBounds()
		_, endB := b.ZoneBounds()
		if endA.IsZero() && endB.IsZero() {
			return true // neither changes again
		}
		t = nextBound(t, endA, endB)
	}
	return true
}

// nextBound returns the earlier of the period ends a and b (zero: none)
// after t, or t + 1h when neither is after t: ZoneBounds of a zone whose
// rules come from its TZ string has given, on 31 December, an end equal
// to t itself.
func nextBound(t, a, b time.Time) time.Time {
	var next time.Time
	for _, end := range []time.Time{a, b} {
		if end.After(t) && (next.IsZero() || end.Before(next)) {
			next = end
		}
	}
	if next.IsZero() {
		return t.Add(time.Hour)
	}
	return next
}

// offsetText returns offset, seconds east of UTC, as +HH:MM.
func offsetText(offset int) string {
	sign := '+'
	if offset < 0 {
		sign, offset = '-', -offset
	}
	return fmt.Sprintf("%c%02d:%02d", sign, offset/3600, offset%3600/60)
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

// parseCron parses expr, a cron expression that is not "@every", with
// cronParser. A panic of the parser (it has panicked on input it did not
// expect) is an error matching ErrInvalidSchedule rather than the
// caller's crash.
func parseCron(expr string) (spec *cron.SpecSchedule, err error) {
	defer func() {
		if v := recover(); v != nil {
			spec, err = nil, fmt.Errorf("%w: %q: the cron parser failed: %s", ErrInvalidSchedule, expr, escapeControl(fmt.Sprint(v)))
		}
	}()
	s, err := cronParser.Parse(expr)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %s", ErrInvalidSchedule, expr, escapeControl(err.Error()))
	}
	spec, ok := s.(*cron.SpecSchedule)
	if !ok {
		return nil, fmt.Errorf("%w: %q: unsupported schedule", ErrInvalidSchedule, expr)
	}
	return spec, nil
}

// isLocal reports whether loc is the machine's own zone: time.Local, a
// location that names itself "Local" as it does (time.LoadLocation
// returns time.Local for "Local"), or one loaded under a name that the
// zone database of many systems links to a zone the machine chooses
// (isMachineZone).
func isLocal(loc *time.Location) bool {
	return loc != nil && (loc == time.Local || loc.String() == "Local" || isMachineZone(loc.String()))
}

// isMachineZone reports whether name is one of the zone database's names
// that stand for a zone each machine sets for itself: Debian's tzdata
// links localtime to /etc/localtime, and posixrules is the system's
// choice of rules for POSIX TZ strings. Loaded by name, they read as that
// machine's zone.
func isMachineZone(name string) bool {
	switch name {
	case "localtime", "posixrules":
		return true
	}
	return false
}

// parseEvery parses the duration of "@every D".
func parseEvery(expr, d string) (Schedule, error) {
	dur, err := time.ParseDuration(strings.TrimSpace(d))
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrInvalidSchedule, expr, err)
	}
	if dur < MinEvery { // said before Every truncates it to microseconds
		return nil, fmt.Errorf("%w: interval %v is below %v", ErrInvalidSchedule, dur, MinEvery)
	}
	s := Every(dur)
	if err := checkSchedule(s); err != nil {
		return nil, err
	}
	return s, nil
}

// cronSchedule is a parsed cron expression. Its slots are searched in
// wall-clock time, where no clock ever changes: spec is the parsed
// expression read in UTC, and loc the zone its wall clock is in. The
// parser's own search in a zone with daylight saving time can step over
// a change of offset that is not a whole hour (Lord Howe Island's 30
// minutes) without checking the hour again: "45 1 * * *" fired at 01:45
// and at 02:45 the day clocks went forward, and "15 2 * * *" skipped the
// day they went back.
type cronSchedule struct {
	spec *cron.SpecSchedule
	loc  *time.Location
	text string
}

// newCronSchedule returns the schedule of spec, whose fields are read in
// spec.Location.
func newCronSchedule(spec *cron.SpecSchedule, text string) *cronSchedule {
	wall := *spec
	wall.Location = time.UTC
	return &cronSchedule{spec: &wall, loc: spec.Location, text: text}
}

// Next returns the first time after t whose wall-clock date and time in
// the schedule's zone match the expression, once for each of them: a
// wall-clock time that happens twice when clocks go back fires at its
// first pass only, and one that does not exist when they go forward is
// skipped. It depends on t alone.
func (c *cronSchedule) Next(t time.Time) time.Time {
	w := wallClock(t.In(c.loc))
	for {
		w = c.spec.Next(w)
		if w.IsZero() {
			return w
		}
		// A time no later than t is a first pass that came before t
		// (t is in the repeat): it fired then.
		if at, ok := firstInstant(w, c.loc); ok && at.After(t) {
			return at.In(t.Location())
		}
	}
}

// wallClock returns t's wall-clock date and time, in UTC.
func wallClock(t time.Time) time.Time {
	return time.Date(t.Year(), t.Month(), t.Day(), t.Hour(), t.Minute(), t.Second(), t.Nanosecond(), time.UTC)
}

// firstInstant returns the earliest instant whose wall-clock date and
// time in loc are w's (in UTC), or false when clocks in loc skipped them.
// Each offset loc has within a day and three hours of the time time.Date
// makes of them is tried, every three hours: changes of offset are
// further apart than that, and none moved a clock by more than a day.
func firstInstant(w time.Time, loc *time.Location) (time.Time, bool) {
	base := time.Date(w.Year(), w.Month(), w.Day(), w.Hour(), w.Minute(), w.Second(), w.Nanosecond(), loc)
	var first time.Time
	for near := -27 * time.Hour; near <= 27*time.Hour; near += 3 * time.Hour {
		_, offset := base.Add(near).Zone()
		at := w.Add(-time.Duration(offset) * time.Second).In(loc)
		if wallClock(at).Equal(w) && (first.IsZero() || at.Before(first)) {
			first = at
		}
	}
	return first, !first.IsZero()
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
	now := time.Now()
	switch next := s.Next(now); {
	case next.IsZero():
		return fmt.Errorf("%w: %s never fires", ErrInvalidSchedule, s)
	case !next.After(now):
		return fmt.Errorf("%w: %s: Next(%s) returned %s, not a later slot",
			ErrInvalidSchedule, s, now.Format(time.RFC3339Nano), next.Format(time.RFC3339Nano))
	}
	return nil
}

// Errors of periodic jobs.
var (
	// ErrInvalidSchedule reports a cron expression that does not parse or
	// never fires, an interval that is too short, or a Schedule whose
	// Next returns a slot not after its input.
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
