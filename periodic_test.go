package leasehold_test

import (
	"context"
	"errors"
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/testlog"
	"github.com/leasehold/leasehold/sqlitedriver/sqlitetest"
)

func TestCronNext(t *testing.T) {
	paris, err := time.LoadLocation("Europe/Paris")
	if err != nil {
		t.Skip("no time zone database:", err)
	}
	at := func(s string) time.Time { return rfc3339(t, s) }
	for _, tt := range []struct {
		expr       string
		loc        *time.Location
		after      string
		want, spec string
	}{
		{"*/15 * * * *", nil, "2026-03-01T10:07:00Z", "2026-03-01T10:15:00Z", "CRON_TZ=UTC */15 * * * *"},
		{"30 * * * * *", nil, "2026-03-01T10:07:31Z", "2026-03-01T10:08:30Z", "CRON_TZ=UTC 30 * * * * *"},
		{"@hourly", nil, "2026-03-01T10:07:00Z", "2026-03-01T11:00:00Z", "CRON_TZ=UTC @hourly"},
		{"@daily", paris, "2026-03-01T10:07:00Z", "2026-03-01T23:00:00Z", "CRON_TZ=Europe/Paris @daily"},
		{"0 9 * * MON-FRI", paris, "2026-03-06T09:00:00Z", "2026-03-09T08:00:00Z", "CRON_TZ=Europe/Paris 0 9 * * MON-FRI"},
		// The night clocks go forward in Paris, 02:30 does not exist.
		{"30 2 * * *", paris, "2026-03-28T02:00:00Z", "2026-03-30T00:30:00Z", "CRON_TZ=Europe/Paris 30 2 * * *"},
		{"CRON_TZ=Europe/Paris 0 12 * * *", nil, "2026-07-01T00:00:00Z", "2026-07-01T10:00:00Z", "CRON_TZ=Europe/Paris 0 12 * * *"},
		{"@every 10s", paris, "2026-03-01T10:07:03Z", "2026-03-01T10:07:10Z", "@every 10s"},
	} {
		s, err := leasehold.Cron(tt.expr, tt.loc)
		if err != nil {
			t.Errorf("Cron(%q): %v", tt.expr, err)
			continue
		}
		if got := s.Next(at(tt.after)); !got.Equal(at(tt.want)) {
			t.Errorf("Cron(%q, %v).Next(%s) = %v, want %s", tt.expr, tt.loc, tt.after, got.UTC(), tt.want)
		}
		if s.String() != tt.spec {
			t.Errorf("Cron(%q).String() = %q, want %q", tt.expr, s.String(), tt.spec)
		}
	}
}

// rfc3339 parses s, an RFC 3339 time, failing t if it does not parse.
func rfc3339(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// TestCronFallBackFiresOnce: in a zone with daylight saving time, each
// wall-clock date and time of a cron expression fires once. The hour that
// clocks repeat when they go back fires in its first pass only (a daily
// slot in it, and every slot of a schedule firing within it); the slots
// of a wall-clock time that does not exist when they go forward are
// skipped, not made up. Over 2026, a daily slot in the hour Paris skips
// (02:30) fires 364 times, one in the hour New York repeats (01:30) 365
// times; every 15 minutes fires 35040 - 4 = 35036 times in both zones.
func TestCronFallBackFiresOnce(t *testing.T) {
	zone := func(name string) *time.Location {
		loc, err := time.LoadLocation(name)
		if err != nil {
			t.Skip("no time zone database:", err)
		}
		return loc
	}
	paris, newYork := zone("Europe/Paris"), zone("America/New_York")
	utc := func(s string) time.Time { return rfc3339(t, s) }
	for _, tt := range []struct {
		expr  string
		loc   *time.Location
		slots int
		// after is a time in the repeated hour's second pass (or just
		// before it); want is the slot Next gives from there.
		after, want string
	}{
		{"30 2 * * *", paris, 364, "2026-10-25T00:30:00Z", "2026-10-26T01:30:00Z"},
		{"30 1 * * *", newYork, 365, "2026-11-01T05:30:00Z", "2026-11-02T06:30:00Z"},
		{"*/15 * * * *", paris, 35036, "2026-10-25T00:45:00Z", "2026-10-25T02:00:00Z"},
		{"*/15 * * * *", paris, 35036, "2026-10-25T01:10:00Z", "2026-10-25T02:00:00Z"},
		{"*/15 * * * *", newYork, 35036, "2026-11-01T05:45:00Z", "2026-11-01T07:00:00Z"},
		{"0 30 1 * * *", newYork, 365, "2026-11-01T06:00:00Z", "2026-11-02T06:30:00Z"},
	} {
		s, err := leasehold.Cron(tt.expr, tt.loc)
		if err != nil {
			t.Fatalf("Cron(%q): %v", tt.expr, err)
		}
		if got := s.Next(utc(tt.after)); !got.Equal(utc(tt.want)) {
			t.Errorf("Cron(%q, %v).Next(%s) = %v, want %s", tt.expr, tt.loc, tt.after, got.UTC(), tt.want)
		}
		from := time.Date(2026, 1, 1, 0, 0, 0, 0, tt.loc)
		to := from.AddDate(1, 0, 0)
		walls := map[string]time.Time{}
		n := 0
		for slot := s.Next(from.Add(-time.Nanosecond)); slot.Before(to); slot = s.Next(slot) {
			wall := slot.In(tt.loc).Format(time.DateTime)
			if first, ok := walls[wall]; ok {
				t.Errorf("Cron(%q, %v): wall clock %s fires at %v and again at %v", tt.expr, tt.loc, wall, first.UTC(), slot.UTC())
			}
			walls[wall] = slot
			n++
		}
		if n != tt.slots {
			t.Errorf("Cron(%q, %v) fires %d times in 2026, want %d", tt.expr, tt.loc, n, tt.slots)
		}
	}
	// Zones without daylight saving time are left as they were.
	kolkata, err := time.LoadLocation("Asia/Kolkata") // +05:30, no daylight saving time
	if err != nil {
		t.Fatal(err)
	}
	for _, loc := range []*time.Location{time.UTC, time.FixedZone("X", -3*3600), kolkata} {
		s, err := leasehold.Cron("*/15 * * * *", loc)
		if err != nil {
			t.Fatal(err)
		}
		from := time.Date(2026, 1, 1, 0, 0, 0, 0, loc)
		n := 0
		for slot := s.Next(from.Add(-time.Nanosecond)); slot.Before(from.AddDate(1, 0, 0)); slot = s.Next(slot) {
			n++
		}
		if n != 35040 {
			t.Errorf("Cron(\"*/15 * * * *\", %v) fires %d times in 2026, want 35040", loc, n)
		}
	}
}

// TestCronHalfHourShiftMatchesItsFields: on Lord Howe Island clocks go
// forward and back by 30 minutes. Every slot's wall-clock time matches
// the expression, and each fires at most once a day: the parser's own
// search fired "45 1 * * *" at 01:45 and again at 02:45 the day clocks go
// forward, and skipped "15 2 * * *" the day they go back, when 02:15
// exists. Over 2026 a daily 01:45 fires 365 times, a daily 02:15 364
// (not the day it does not exist), every 15 minutes 35040 - 2 = 35038
// (no 02:00 or 02:15 the day clocks go forward; 01:30 and 01:45 fire
// once the day they go back).
func TestCronHalfHourShiftMatchesItsFields(t *testing.T) {
	loc, err := time.LoadLocation("Australia/Lord_Howe")
	if err != nil {
		t.Skip("no time zone database:", err)
	}
	for _, tt := range []struct {
		expr  string
		slots int
		wall  func(hhmm string) bool
	}{
		{"45 1 * * *", 365, func(w string) bool { return w == "01:45" }},
		{"15 2 * * *", 364, func(w string) bool { return w == "02:15" }},
		{"*/15 * * * *", 35038, func(w string) bool { return strings.Contains(":00:15:30:45", w[2:]) }},
	} {
		s, err := leasehold.Cron(tt.expr, loc)
		if err != nil {
			t.Fatalf("Cron(%q): %v", tt.expr, err)
		}
		from := time.Date(2026, 1, 1, 0, 0, 0, 0, loc)
		n, days := 0, map[string]int{}
		for slot := s.Next(from.Add(-time.Nanosecond)); slot.Before(from.AddDate(1, 0, 0)); slot = s.Next(slot) {
			local := slot.In(loc)
			if w := local.Format("15:04"); !tt.wall(w) {
				t.Errorf("Cron(%q, Lord_Howe) fires at %s (%v), a time the expression does not name", tt.expr, local.Format(time.DateTime), slot.UTC())
			}
			days[local.Format(time.DateOnly)]++
			n++
		}
		if n != tt.slots {
			t.Errorf("Cron(%q, Lord_Howe) fires %d times in 2026, want %d", tt.expr, n, tt.slots)
		}
		if tt.slots <= 366 {
			for day, k := range days {
				if k > 1 {
					t.Errorf("Cron(%q, Lord_Howe) fires %d times on %s", tt.expr, k, day)
				}
			}
		}
	}
}

func TestCronRefusesBadExpressions(t *testing.T) {
	for _, expr := range []string{"", "* * *", "61 * * * *", "@sometimes", "0 0 30 2 *", "@every 0s",
		"@every soon", "CRON_TZ=Nowhere/Land * * * * *",
		// A zone and no fields: the parser panicked on these.
		"CRON_TZ=UTC", "TZ=Europe/Paris", "  CRON_TZ=UTC  ", "CRON_TZ=UTC\t0 9 * * *",
		// The machine's zone: each process would read the fields in its own.
		"CRON_TZ=Local 0 9 * * *", "TZ=Local 0 9 * * *", "CRON_TZ=Local @daily"} {
		if _, err := leasehold.Cron(expr, nil); !errors.Is(err, leasehold.ErrInvalidSchedule) {
			t.Errorf("Cron(%q) = %v, want ErrInvalidSchedule", expr, err)
		}
	}
	// An interval too short is reported as given, not as Every truncates it.
	if _, err := leasehold.Cron("@every 1ns", nil); err == nil || !strings.Contains(err.Error(), "interval 1ns is below 1ms") {
		t.Errorf("Cron(@every 1ns) = %v, want interval 1ns is below 1ms", err)
	}
	// The parser's message echoes the zone: its control characters are
	// escaped, as in the expression quoted before it.
	if _, err := leasehold.Cron("CRON_TZ=Bad\x1b[31mZone * * * * *", nil); err == nil || strings.Contains(err.Error(), "\x1b") {
		t.Errorf("Cron with an escape sequence in its zone = %q, want an error with it escaped", err)
	}
	if _, err := leasehold.Cron("CRON_TZ=UTC * * * * *", time.UTC); !errors.Is(err, leasehold.ErrInvalidSchedule) {
		t.Errorf("Cron with a zone in the expression and a location = %v, want ErrInvalidSchedule", err)
	}
}

// TestCronRefusesTheLocalZone checks that the machine's own zone is
// refused, named in the expression or given as loc, with an error that
// says to name the zone: processes on machines set to different zones
// would compute different slots and each enqueue its own.
func TestCronRefusesTheLocalZone(t *testing.T) {
	for _, tt := range []struct {
		expr string
		loc  *time.Location
		zone string // a zone the case needs from the zone database
	}{
		{"CRON_TZ=Local 0 9 * * *", nil, ""},
		{"TZ=Local 0 9 * * *", nil, ""},
		{"0 9 * * *", time.Local, ""},
		{"@daily", time.Local, ""},
		{"0 9 * * *", time.FixedZone("Local", 3600), ""},
		{"@every 1h", time.Local, ""}, // harmless, but refused as every use of time.Local is
		{"0 9 * * *", time.FixedZone("localtime", 3600), ""},
		{"CRON_TZ=localtime 0 9 * * *", nil, "localtime"},
		{"TZ=posixrules 0 9 * * *", nil, "posixrules"},
	} {
		if _, err := time.LoadLocation(tt.zone); tt.zone != "" && err != nil {
			t.Logf("%s: no zone %s here: %v", tt.expr, tt.zone, err)
			continue
		}
		_, err := leasehold.Cron(tt.expr, tt.loc)
		if !errors.Is(err, leasehold.ErrInvalidSchedule) || !strings.Contains(err.Error(), "Europe/Paris") {
			t.Errorf("Cron(%q, %v) = %v, want ErrInvalidSchedule saying to name the zone", tt.expr, tt.loc, err)
		}
	}
}

func TestEveryIsAlignedToTheEpoch(t *testing.T) {
	s := leasehold.Every(10 * time.Second)
	base := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, tt := range []struct{ after, want time.Duration }{
		{0, 10 * time.Second}, {3 * time.Second, 10 * time.Second}, {10 * time.Second, 20 * time.Second},
		{19*time.Second + 999*time.Millisecond, 20 * time.Second},
	} {
		if got := s.Next(base.Add(tt.after)); !got.Equal(base.Add(tt.want)) {
			t.Errorf("Every(10s).Next(+%v) = %v, want +%v", tt.after, got, tt.want)
		}
	}
	local := time.FixedZone("X", 3600+1800)
	if got := s.Next(base.In(local).Add(time.Second)); !got.Equal(base.Add(10 * time.Second)) {
		t.Errorf("Every(10s) from another zone = %v, want the same slot", got)
	}
}

type tickArgs struct{}

func (tickArgs) Kind() string { return "tick" }

type badKindArgs struct{}

func (badKindArgs) Kind() string { return "no spaces allowed" }

func tick(time.Time) (leasehold.Args, *leasehold.InsertOpts) { return tickArgs{}, nil }

func TestAddPeriodicErrors(t *testing.T) {
	d := sqlitetest.Open(t)
	c, err := leasehold.NewClient(leasehold.Config{Driver: d})
	if err != nil {
		t.Fatal(err)
	}
	ok := leasehold.PeriodicJob{Name: "tick", Schedule: leasehold.Every(time.Hour), Args: tick}
	if err := c.AddPeriodic(ok); err != nil {
		t.Fatalf("AddPeriodic: %v", err)
	}
	bad := func(f func(*leasehold.PeriodicJob)) leasehold.PeriodicJob {
		j := ok
		j.Name = "other"
		f(&j)
		return j
	}
	for _, tt := range []struct {
		name string
		job  leasehold.PeriodicJob
		want []error
	}{
		{"duplicate", ok, []error{leasehold.ErrPeriodicExists}},
		{"bad name", bad(func(j *leasehold.PeriodicJob) { j.Name = "a b" }), []error{leasehold.ErrInvalidPeriodic}},
		{"no schedule", bad(func(j *leasehold.PeriodicJob) { j.Schedule = nil }), []error{leasehold.ErrInvalidPeriodic, leasehold.ErrInvalidSchedule}},
		{"interval too short", bad(func(j *leasehold.PeriodicJob) { j.Schedule = leasehold.Every(time.Microsecond) }), []error{leasehold.ErrInvalidSchedule}},
		{"next not after", bad(func(j *leasehold.PeriodicJob) { j.Schedule = backwards{} }), []error{leasehold.ErrInvalidSchedule}},
		{"no args", bad(func(j *leasehold.PeriodicJob) { j.Args = nil }), []error{leasehold.ErrInvalidPeriodic}},
		{"bad policy", bad(func(j *leasehold.PeriodicJob) { j.CatchUp = 7 }), []error{leasehold.ErrInvalidPeriodic}},
		{"negative grace", bad(func(j *leasehold.PeriodicJob) { j.Grace = -time.Second }), []error{leasehold.ErrInvalidPeriodic}},
		{"grace below the minimum", bad(func(j *leasehold.PeriodicJob) { j.Grace = time.Millisecond }), []error{leasehold.ErrInvalidPeriodic}},
		{"bad kind", bad(func(j *leasehold.PeriodicJob) {
			j.Args = func(time.Time) (leasehold.Args, *leasehold.InsertOpts) { return badKindArgs{}, nil }
		}), []error{leasehold.ErrInvalidPeriodic, leasehold.ErrInvalidKind}},
	} {
		err := c.AddPeriodic(tt.job)
		for _, want := range tt.want {
			if !errors.Is(err, want) {
				t.Errorf("%s: AddPeriodic = %v, want it to match %v", tt.name, err, want)
			}
		}
	}
	panicky := bad(func(j *leasehold.PeriodicJob) {
		j.Args = func(time.Time) (leasehold.Args, *leasehold.InsertOpts) { panic("tenant table not loaded") }
	})
	var pe *leasehold.PanicError
	if err := c.AddPeriodic(panicky); !errors.Is(err, leasehold.ErrInvalidPeriodic) || !errors.As(err, &pe) {
		t.Errorf("AddPeriodic whose Args panics = %v, want ErrInvalidPeriodic with a *PanicError", err)
	}
	if err := c.RemovePeriodic("nope"); !errors.Is(err, leasehold.ErrPeriodicNotFound) {
		t.Errorf("RemovePeriodic of an unknown name = %v, want ErrPeriodicNotFound", err)
	}
	if err := c.RemovePeriodic("tick"); err != nil {
		t.Errorf("RemovePeriodic before Start: %v", err)
	}
	if ok, err := c.ForgetPeriodic(t.Context(), "bad name"); ok || !errors.Is(err, leasehold.ErrInvalidPeriodic) {
		t.Errorf("ForgetPeriodic of a name no schedule could have = %v, %v; want false, ErrInvalidPeriodic", ok, err)
	}
	if err := c.Stop(t.Context()); err != nil {
		t.Fatal(err)
	}
	if err := c.AddPeriodic(ok); !errors.Is(err, leasehold.ErrClientStopped) {
		t.Errorf("AddPeriodic after Stop = %v, want ErrClientStopped", err)
	}
	_, err = leasehold.NewClient(leasehold.Config{Driver: d, Periodic: []leasehold.PeriodicJob{ok, ok}})
	if !errors.Is(err, leasehold.ErrInvalidConfig) || !errors.Is(err, leasehold.ErrPeriodicExists) {
		t.Errorf("NewClient with a periodic job twice = %v, want ErrInvalidConfig and ErrPeriodicExists", err)
	}
}

// TestPeriodicUnworkedQueueWarned: a periodic job whose queue the client
// does not work is accepted, and logged once as a warning naming the
// schedule and the queue: at Start for one added before, when added for
// one added to a running client; a job of a worked queue is not. A client
// with no workers only inserts, as documented, and warns of nothing.
func TestPeriodicUnworkedQueueWarned(t *testing.T) {
	ws := leasehold.NewWorkers()
	if err := leasehold.AddWorker(ws, leasehold.WorkFunc[tickArgs](func(context.Context, *leasehold.Job[tickArgs]) error { return nil })); err != nil {
		t.Fatal(err)
	}
	d := sqlitetest.Open(t)
	var logs lockedLog
	c := startedWithPeriodic(t, leasehold.Config{Driver: d, Workers: ws, Logger: logs.Logger()},
		periodicIn("worked", ""), periodicIn("elsewhere", "reports"))
	if err := c.AddPeriodic(periodicIn("later", "audit")); err != nil {
		t.Fatal(err)
	}
	logs.check(t, map[string]string{"elsewhere": "reports", "later": "audit"})

	var idle lockedLog
	startedWithPeriodic(t, leasehold.Config{Driver: d, Logger: idle.Logger()}, periodicIn("worked", ""))
	idle.check(t, map[string]string{})
}

// periodicIn is an hourly periodic job name inserting into queue ("": the
// default one).
func periodicIn(name, queue string) leasehold.PeriodicJob {
	return leasehold.PeriodicJob{Name: name, Schedule: leasehold.Every(time.Hour),
		Args: func(time.Time) (leasehold.Args, *leasehold.InsertOpts) {
			return tickArgs{}, &leasehold.InsertOpts{Queue: queue}
		}}
}

// startedWithPeriodic returns a client of cfg, started with jobs added
// before Start, and stopped at cleanup.
func startedWithPeriodic(t *testing.T, cfg leasehold.Config, jobs ...leasehold.PeriodicJob) *leasehold.Client {
	t.Helper()
	c, err := leasehold.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range jobs {
		if err := c.AddPeriodic(j); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	return c
}

// lockedLog collects a client's log lines; the client logs from several
// goroutines.
type lockedLog struct{ testlog.Buffer }

// check fails t unless the log warns of exactly the schedules of want,
// once each, with their queue.
func (l *lockedLog) check(t *testing.T, want map[string]string) {
	t.Helper()
	text := l.String()
	got := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		if !strings.Contains(line, "does not work") {
			continue
		}
		name, queue := logValue(line, "periodic"), logValue(line, "queue")
		if _, dup := got[name]; dup || !strings.Contains(line, "level=WARN") {
			t.Errorf("a second warning, or not a warning, for %s: %s", name, line)
		}
		got[name] = queue
	}
	if !maps.Equal(got, want) {
		t.Errorf("warned of periodic jobs (name: queue) %v, want %v; log:\n%s", got, want, text)
	}
}

// logValue returns the value of key in a text log line.
func logValue(line, key string) string {
	for _, f := range strings.Fields(line) {
		if v, ok := strings.CutPrefix(f, key+"="); ok {
			return v
		}
	}
	return ""
}

// TestPeriodicMiddlewareErrorRetried: an insert middleware error that a
// retry may clear (a lookup that timed out) does not skip the slot: it is
// retried with the enqueuer's backoff, as a database error is, and the
// slot gets its job within its grace. An error the middleware marks
// Permanent still refuses the slot at once.
func TestPeriodicMiddlewareErrorRetried(t *testing.T) {
	var (
		mu    sync.Mutex
		first = map[string]string{} // schedule: the unique key of its first slot's job
	)
	failOnce := leasehold.InsertMiddlewareFunc(func(ctx context.Context, _ any, jobs []*leasehold.InsertJob,
		next func(context.Context) ([]*leasehold.InsertResult, error)) ([]*leasehold.InsertResult, error) {
		key := jobs[0].Opts.UniqueKey
		name := strings.Split(key, ":")[1]
		mu.Lock()
		_, tried := first[name]
		if !tried {
			first[name] = key
		}
		mu.Unlock()
		switch {
		case tried:
			return next(ctx)
		case name == "flaky":
			return nil, errors.New("tenant lookup: context deadline exceeded")
		default:
			return nil, leasehold.Permanent(errors.New("tenant suspended"))
		}
	})
	var logs lockedLog
	every := func(name string) leasehold.PeriodicJob {
		return leasehold.PeriodicJob{Name: name, Schedule: leasehold.Every(time.Second), Args: tick, Grace: time.Minute}
	}
	c := startedWithPeriodic(t, leasehold.Config{Driver: sqlitetest.Open(t), Logger: logs.Logger(),
		InsertMiddleware: []leasehold.InsertMiddleware{failOnce}}, every("flaky"), every("refused"))
	got := map[string]string{} // schedule: the unique key of its first job
	waitJobs(t, c, &logs, "a job of each schedule", func(jobs []*leasehold.JobRow) bool {
		clear(got)
		for _, j := range jobs {
			if name := strings.Split(j.UniqueKey, ":")[1]; got[name] == "" {
				got[name] = j.UniqueKey
			}
		}
		return len(got) == 2
	})
	mu.Lock()
	defer mu.Unlock()
	if got["flaky"] != first["flaky"] {
		t.Errorf("the first job of flaky is %s, want its first slot's, %s, whose middleware failed once; log:\n%s",
			got["flaky"], first["flaky"], logs.String())
	}
	if got["refused"] == first["refused"] {
		t.Errorf("the first slot of refused, %s, which the middleware refused with a permanent error, got a job; log:\n%s",
			first["refused"], logs.String())
	}
}

// TestPeriodicPanicRefusesSlot: Args or an insert middleware that panic
// for a slot, on the enqueuer's goroutine, do not take the process down:
// the slot is refused, the panic logged with its value and stack, and the
// schedule goes on with its next slots. A middleware that panics once the
// slot's job is written leaves the job, and the panic is logged.
func TestPeriodicPanicRefusesSlot(t *testing.T) {
	var argsCalls atomic.Int32
	panicky := func(time.Time) (leasehold.Args, *leasehold.InsertOpts) {
		if argsCalls.Add(1) == 2 { // the first call is AddPeriodic's probe
			panic("tenant table not loaded")
		}
		return tickArgs{}, nil
	}
	var (
		mu        sync.Mutex
		firstLate string // the unique key of the first slot of schedule late
		tried     = map[string]bool{}
	)
	mw := leasehold.InsertMiddlewareFunc(func(ctx context.Context, _ any, jobs []*leasehold.InsertJob,
		next func(context.Context) ([]*leasehold.InsertResult, error)) ([]*leasehold.InsertResult, error) {
		key := jobs[0].Opts.UniqueKey
		name := strings.Split(key, ":")[1]
		mu.Lock()
		first := !tried[name]
		tried[name] = true
		if first && name == "late" {
			firstLate = key
		}
		mu.Unlock()
		switch {
		case first && name == "mw":
			panic(errors.New("metrics registry closed"))
		case first && name == "late":
			_, _ = next(ctx)
			panic("span exporter gone")
		}
		return next(ctx)
	})
	var logs lockedLog
	every := func(name string, args func(time.Time) (leasehold.Args, *leasehold.InsertOpts)) leasehold.PeriodicJob {
		return leasehold.PeriodicJob{Name: name, Schedule: leasehold.Every(time.Second), Args: args}
	}
	c := startedWithPeriodic(t, leasehold.Config{Driver: sqlitetest.Open(t), Logger: logs.Logger(),
		InsertMiddleware: []leasehold.InsertMiddleware{mw}}, every("args", panicky), every("mw", tick), every("late", tick))
	keys := map[string]bool{}
	waitJobs(t, c, &logs, "two jobs of each schedule", func(jobs []*leasehold.JobRow) bool {
		n := map[string]int{}
		for _, j := range jobs {
			n[strings.Split(j.UniqueKey, ":")[1]]++
			keys[j.UniqueKey] = true
		}
		return n["args"] >= 2 && n["mw"] >= 2 && n["late"] >= 2
	})
	text := logs.String()
	for _, name := range []string{"args", "mw"} {
		if strings.Count(text, "slot skipped\" schedule="+name+" ") != 1 {
			t.Errorf("the log does not say once that schedule %s skipped a slot; log:\n%s", name, text)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if !keys[firstLate] {
		t.Errorf("the first slot of late (%s), whose middleware panicked once its job was written, has no job; log:\n%s", firstLate, text)
	}
	if !strings.Contains(text, "written\" schedule=late ") || strings.Contains(text, "slot skipped\" schedule=late ") {
		t.Errorf("the log does not say that late's middleware panicked once its job was written, or says its slot was skipped; log:\n%s", text)
	}
	if n := c.Stats().Panics; n != 3 {
		t.Errorf("Stats().Panics = %d, want 3 (Args, a middleware before the write, a middleware after it)", n)
	}
	for _, want := range []string{"panic: tenant table not loaded", "panic: metrics registry closed", "panic: span exporter gone",
		"TestPeriodicPanicRefusesSlot.func1", "TestPeriodicPanicRefusesSlot.func2"} {
		if !strings.Contains(text, want) {
			t.Errorf("the log does not name the panic and its stack (%q); log:\n%s", want, text)
		}
	}
}

// waitJobs waits until the jobs of kind tick in c's database, oldest
// first, are what done wants, and returns them; it fails t after 10 s
// with the log.
func waitJobs(t *testing.T, c *leasehold.Client, logs *lockedLog, want string, done func([]*leasehold.JobRow) bool) []*leasehold.JobRow {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		jobs, err := c.ListJobs(t.Context(), &leasehold.ListParams{Kind: tickArgs{}.Kind()})
		if err != nil {
			t.Fatal(err)
		}
		if done(jobs) {
			return jobs
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s after 10 s: %d jobs; log:\n%s", want, len(jobs), logs.String())
		}
	}
}

// panicky is a Schedule whose Next panics from call number from on, and
// whose String panics when str is set.
type panicky struct {
	from  int32
	calls *atomic.Int32
	str   bool
}

func (p panicky) Next(t time.Time) time.Time {
	if p.calls.Add(1) >= p.from {
		panic("schedule table not loaded")
	}
	return t.Truncate(time.Second).Add(time.Second)
}

func (p panicky) String() string {
	if p.str {
		panic("no name yet")
	}
	return "panicky"
}

// TestPeriodicNextPanics: a Schedule whose Next or String panics when
// added is refused (ErrInvalidPeriodic, with the *PanicError); one whose
// Next panics once running stops firing, logged and counted in
// Stats.Panics, and the client and its other schedules go on.
func TestPeriodicNextPanics(t *testing.T) {
	c, err := leasehold.NewClient(leasehold.Config{Driver: sqlitetest.Open(t)})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []panicky{{from: 1, calls: new(atomic.Int32)}, {from: 1 << 30, calls: new(atomic.Int32), str: true}} {
		var pe *leasehold.PanicError
		err := c.AddPeriodic(leasehold.PeriodicJob{Name: "p", Schedule: s, Args: tick})
		if !errors.Is(err, leasehold.ErrInvalidPeriodic) || !errors.As(err, &pe) {
			t.Errorf("AddPeriodic of a schedule that panics (String panics: %v) = %v, want ErrInvalidPeriodic with a *PanicError", s.str, err)
		}
	}
	var logs lockedLog
	calls := new(atomic.Int32)
	c = startedWithPeriodic(t, leasehold.Config{Driver: sqlitetest.Open(t), Logger: logs.Logger()},
		leasehold.PeriodicJob{Name: "broken", Schedule: panicky{from: 4, calls: calls}, Args: tick},
		leasehold.PeriodicJob{Name: "fine", Schedule: leasehold.Every(200 * time.Millisecond), Args: tick})
	waitJobs(t, c, &logs, "three jobs of schedule fine after broken's Next panicked", func(jobs []*leasehold.JobRow) bool {
		n := 0
		for _, j := range jobs {
			if strings.Split(j.UniqueKey, ":")[1] == "fine" {
				n++
			}
		}
		return n >= 3 && strings.Contains(logs.String(), "its Next panicked")
	})
	if n := calls.Load(); n != 4 {
		t.Errorf("the broken schedule's Next was called %d times, want 4 (it stops at its first panic)", n)
	}
	if p := c.Stats().Panics; p != 1 {
		t.Errorf("Stats().Panics = %d, want 1", p)
	}
}

// backwards is a Schedule that breaks the contract: its next slot is an
// hour before its input.
type backwards struct{}

func (backwards) Next(t time.Time) time.Time { return t.Add(-time.Hour) }
func (backwards) String() string             { return "backwards" }

// TestValidatePeriodicName: the exported check follows the name rule.
func TestValidatePeriodicName(t *testing.T) {
	for _, n := range []string{"", "bad name", "-x", strings.Repeat("n", 129)} {
		if err := leasehold.ValidatePeriodicName(n); !errors.Is(err, leasehold.ErrInvalidPeriodic) {
			t.Errorf("ValidatePeriodicName(%q) = %v, want ErrInvalidPeriodic", n, err)
		}
	}
	for _, n := range []string{"tick", "nightly.report", "a/b:c-d_e"} {
		if err := leasehold.ValidatePeriodicName(n); err != nil {
			t.Errorf("ValidatePeriodicName(%q) = %v, want nil", n, err)
		}
	}
}

// TestPeriodicSelfRemoval checks that a schedule can remove itself from
// its own Args or insert middleware: RemovePeriodic (and ForgetPeriodic)
// returned no more when called from the goroutine that runs the
// schedule, which Remove waited for. The call returns, and the schedule
// claims no slot afterwards: Args removing it refuses the slot it was
// building, and a middleware removing it after next keeps that slot's
// job only.
func TestPeriodicSelfRemoval(t *testing.T) {
	var (
		c     *leasehold.Client
		calls atomic.Int32
		errs  = make(chan error, 3)
	)
	args := func(slot time.Time) (leasehold.Args, *leasehold.InsertOpts) {
		if calls.Add(1) == 2 { // the first slot (the first call checks the job when it is added)
			errs <- c.RemovePeriodic("args")
		}
		return tickArgs{}, nil
	}
	var once sync.Once
	mw := leasehold.InsertMiddlewareFunc(func(ctx context.Context, _ any, jobs []*leasehold.InsertJob,
		next func(context.Context) ([]*leasehold.InsertResult, error)) ([]*leasehold.InsertResult, error) {
		res, err := next(ctx)
		if strings.HasPrefix(jobs[0].Opts.UniqueKey, "periodic:mw:") {
			once.Do(func() {
				errs <- c.RemovePeriodic("mw")
				_, ferr := c.ForgetPeriodic(context.Background(), "mw")
				errs <- ferr
			})
		}
		return res, err
	})
	var (
		logs lockedLog
		err  error
	)
	c, err = leasehold.NewClient(leasehold.Config{Driver: sqlitetest.Open(t), Logger: logs.Logger(),
		InsertMiddleware: []leasehold.InsertMiddleware{mw}})
	if err != nil {
		t.Fatal(err)
	}
	for _, j := range []leasehold.PeriodicJob{
		{Name: "args", Schedule: leasehold.Every(100 * time.Millisecond), Args: args},
		{Name: "mw", Schedule: leasehold.Every(100 * time.Millisecond), Args: tick},
	} {
		if err := c.AddPeriodic(j); err != nil {
			t.Fatal(err)
		}
	}
	if err := c.Start(t.Context()); err != nil { // c is set before the schedules' goroutines read it
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	for range 3 {
		select {
		case err := <-errs:
			if err != nil {
				t.Errorf("removing a schedule from its own Args or middleware: %v", err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("RemovePeriodic or ForgetPeriodic from the schedule's own Args or middleware did not return; log:\n%s", logs.String())
		}
	}
	time.Sleep(500 * time.Millisecond) // five slots of each, were they still running
	for _, name := range []string{"args", "mw"} {
		if err := c.RemovePeriodic(name); !errors.Is(err, leasehold.ErrPeriodicNotFound) {
			t.Errorf("RemovePeriodic(%s) again = %v, want ErrPeriodicNotFound", name, err)
		}
	}
	jobs, err := c.ListJobs(t.Context(), &leasehold.ListParams{Kind: tickArgs{}.Kind()})
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]int{}
	for _, j := range jobs {
		byName[strings.Split(j.UniqueKey, ":")[1]]++
	}
	if byName["args"] != 0 || byName["mw"] != 1 {
		t.Errorf("jobs by schedule %v, want none of args (removed while building its first slot) and one of mw", byName)
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("Args of the removed schedule called %d times, want 2 (the check, the slot that removed it)", n)
	}
	rows, err := c.ListPeriodic(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range rows {
		if r.Name == "mw" {
			t.Errorf("schedule mw still recorded after ForgetPeriodic: %+v", r)
		}
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	if err := c.Stop(ctx); err != nil {
		t.Errorf("Stop: %v", err)
	}
}

// TestPeriodicSelfRemovalDetachedContext: a schedule whose Args removes
// it inserts no job for the slot it was building even when an insert
// middleware runs the rest of the insert on a context that is never
// cancelled (context.WithoutCancel): removal cancels the schedule's
// context, but what refuses the slot's claim is the schedule being marked
// removed, whatever context the claim runs on.
func TestPeriodicSelfRemovalDetachedContext(t *testing.T) {
	var (
		c     *leasehold.Client
		calls atomic.Int32
		errs  = make(chan error, 1)
	)
	args := func(slot time.Time) (leasehold.Args, *leasehold.InsertOpts) {
		if calls.Add(1) == 2 { // the first slot (the first call checks the job when it is added)
			errs <- c.RemovePeriodic("detached")
		}
		return tickArgs{}, nil
	}
	mw := leasehold.InsertMiddlewareFunc(func(ctx context.Context, _ any, _ []*leasehold.InsertJob,
		next func(context.Context) ([]*leasehold.InsertResult, error)) ([]*leasehold.InsertResult, error) {
		return next(context.WithoutCancel(ctx))
	})
	var (
		logs lockedLog
		err  error
	)
	c, err = leasehold.NewClient(leasehold.Config{Driver: sqlitetest.Open(t), Logger: logs.Logger(),
		InsertMiddleware: []leasehold.InsertMiddleware{mw}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.AddPeriodic(leasehold.PeriodicJob{Name: "detached", Schedule: leasehold.Every(100 * time.Millisecond), Args: args}); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(t.Context()); err != nil { // c is set before the schedule's goroutine reads it
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	select {
	case err := <-errs:
		if err != nil {
			t.Fatalf("removing a schedule from its own Args: %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatalf("Args not called for a slot, or RemovePeriodic from it did not return; log:\n%s", logs.String())
	}
	time.Sleep(300 * time.Millisecond) // three slots, were it still running
	jobs, err := c.ListJobs(t.Context(), &leasehold.ListParams{Kind: tickArgs{}.Kind()})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 0 {
		t.Errorf("%d jobs of a schedule removed by its own Args while building its first slot, want 0", len(jobs))
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("Args of the removed schedule called %d times, want 2 (the check, the slot that removed it)", n)
	}
}

// TestPeriodicUniqueKeyNamesItsSlot: a periodic job whose Args sets no
// unique key gets the documented one, "periodic:NAME:SLOT" with the slot
// in RFC 3339 UTC (PeriodicUniqueKey), and it holds the slot: another
// insert of the slot's job, as a manual enqueue would make, is a
// duplicate of the job the schedule inserted.
func TestPeriodicUniqueKeyNamesItsSlot(t *testing.T) {
	var logs lockedLog
	c := startedWithPeriodic(t, leasehold.Config{Driver: sqlitetest.Open(t), Logger: logs.Logger()},
		leasehold.PeriodicJob{Name: "keyed", Schedule: leasehold.Every(time.Second), Args: tick})
	waitJobs(t, c, &logs, "job of the schedule", func(jobs []*leasehold.JobRow) bool { return len(jobs) > 0 })
	if err := c.RemovePeriodic("keyed"); err != nil { // no later slot changes the row read below
		t.Fatal(err)
	}
	rows, err := c.ListPeriodic(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || rows[0].LastSlot.IsZero() || rows[0].LastJobID == 0 {
		t.Fatalf("schedules %+v, want keyed with its last slot and job", rows)
	}
	slot, id := rows[0].LastSlot, rows[0].LastJobID
	job, err := c.GetJob(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	want := "periodic:keyed:" + slot.UTC().Format(time.RFC3339)
	if job.UniqueKey != want || leasehold.PeriodicUniqueKey("keyed", slot) != want {
		t.Fatalf("unique key of the slot's job %q, PeriodicUniqueKey %q; want %q",
			job.UniqueKey, leasehold.PeriodicUniqueKey("keyed", slot), want)
	}
	res, err := c.Insert(t.Context(), tickArgs{}, &leasehold.InsertOpts{UniqueKey: want})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Duplicate || res.Job.ID != id {
		t.Fatalf("second insert of slot %v: job %d duplicate %v; want a duplicate of job %d", slot, res.Job.ID, res.Duplicate, id)
	}
	jobs, err := c.ListJobs(t.Context(), &leasehold.ListParams{Kind: tickArgs{}.Kind()})
	if err != nil {
		t.Fatal(err)
	}
	var ofSlot int
	for _, j := range jobs {
		if j.UniqueKey == want {
			ofSlot++
		}
	}
	if ofSlot != 1 {
		t.Fatalf("%d jobs of slot %v, want the one the schedule inserted", ofSlot, slot)
	}
}
