package maintenance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/testlog"
	"github.com/leasehold/leasehold/leasetype"
)

// fakeSlots is a database clock that only the enqueuer's sleeps move, a
// schedule row, and the slot claims, which win when later than the last
// one, as the drivers' conditional write does (the drivers themselves
// are tested against real databases by the conformance suite).
type fakeSlots struct {
	mu       sync.Mutex
	now      time.Time
	last     time.Time
	created  time.Time // the row's created_at; zero: the registration's time, f.now
	claimed  []time.Time
	tried    int
	listed   int   // reads of the schedule's row (PeriodicList)
	failures int   // Insert fails this many times first
	refuse   error // Insert returns it for the first slot tried
	stopAt   int   // cancel once this many slots are claimed
	cancel   context.CancelFunc
}

func (f *fakeSlots) Now(context.Context) (time.Time, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now, nil
}

func (f *fakeSlots) PeriodicRegister(_ context.Context, p *driver.PeriodicRegisterParams) (*leasetype.PeriodicRow, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	created := f.created
	if created.IsZero() {
		created = f.now // a row this registration creates
	}
	return &leasetype.PeriodicRow{Name: p.Name, LastSlot: f.last, CreatedAt: created}, nil
}

func (f *fakeSlots) PeriodicList(context.Context) ([]*leasetype.PeriodicRow, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.listed++
	return []*leasetype.PeriodicRow{{Name: "s", LastSlot: f.last}}, nil
}

func (f *fakeSlots) sleep(ctx context.Context, d time.Duration) bool {
	f.mu.Lock()
	f.now = f.now.Add(d)
	f.mu.Unlock()
	return ctx.Err() == nil
}

func (f *fakeSlots) insert(_ context.Context, slot, _, _ time.Time, _ Claim) (*driver.PeriodicInsertResult, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tried++
	if f.refuse != nil && f.tried == 1 {
		return nil, f.refuse
	}
	if f.failures > 0 {
		f.failures--
		return nil, errors.New("database unreachable")
	}
	if !f.last.IsZero() && !f.last.Before(slot) {
		return &driver.PeriodicInsertResult{}, nil
	}
	f.last = slot
	f.claimed = append(f.claimed, slot)
	if len(f.claimed) == f.stopAt {
		f.cancel()
	}
	return &driver.PeriodicInsertResult{Claimed: true}, nil
}

// run runs one schedule of an Every-like slot function until f has
// claimed stopAt slots, and returns them as offsets from base.
func (f *fakeSlots) run(t *testing.T, base time.Time, every time.Duration, catchUp bool) []time.Duration {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	f.cancel = cancel
	e := NewEnqueuer(EnqueuerConfig{Driver: f, Logger: discard, Sleep: f.sleep})
	s := &Schedule{Name: "s", Next: func(t time.Time) time.Time { return t.Truncate(every).Add(every) },
		Grace: time.Minute, CatchUp: catchUp, Insert: f.insert}
	e.run(ctx, &runner{s: s})
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("the enqueuer claimed %d slots in 10 s, want %d", len(f.claimed), f.stopAt)
	}
	out := make([]time.Duration, len(f.claimed))
	for i, c := range f.claimed {
		out[i] = c.Sub(base)
	}
	return out
}

func TestEnqueuerSlots(t *testing.T) {
	base := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	s := func(secs ...int) []time.Duration {
		out := make([]time.Duration, len(secs))
		for i, n := range secs {
			out[i] = time.Duration(n) * time.Second
		}
		return out
	}
	for _, tt := range []struct {
		name    string
		now     time.Time
		last    time.Time // the schedule's last slot in the database
		created time.Time // when its row was created; zero: by this registration
		catchUp bool
		stopAt  int
		want    []time.Duration
	}{
		{"new schedule starts after now", base.Add(500 * time.Millisecond), time.Time{}, time.Time{}, false, 3, s(10, 20, 30)},
		{"resumes after a short stop", base.Add(25 * time.Second), base.Add(10 * time.Second), time.Time{}, false, 3, s(20, 30, 40)},
		{"skips slots past the grace", base.Add(10 * time.Minute), base, time.Time{}, false, 2, s(550, 560)},
		{"catches up one missed slot", base.Add(10 * time.Minute), base, time.Time{}, true, 3, s(540, 550, 560)},
		{"last slot ahead of the clock", base.Add(5 * time.Second), base.Add(20 * time.Second), time.Time{}, false, 1, s(30)},
		// A row recorded earlier, with no slot claimed since: its slots
		// start after that first registration.
		{"recorded row catches up a missed slot", base.Add(10 * time.Minute), time.Time{}, base.Add(5 * time.Second), true, 3, s(540, 550, 560)},
		{"recorded row skips missed slots", base.Add(10 * time.Minute), time.Time{}, base.Add(5 * time.Second), false, 2, s(550, 560)},
		{"recorded row enqueues slots still on time", base.Add(25 * time.Second), time.Time{}, base.Add(5 * time.Second), false, 3, s(10, 20, 30)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeSlots{now: tt.now, last: tt.last, created: tt.created, stopAt: tt.stopAt}
			got := f.run(t, base, 10*time.Second, tt.catchUp)
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Fatalf("claimed slots %v, want %v", got, tt.want)
			}
		})
	}
}

func TestEnqueuerRetriesFailedClaimAndSkipsRefused(t *testing.T) {
	base := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	f := &fakeSlots{now: base.Add(time.Second), failures: 3, stopAt: 2}
	if got := f.run(t, base, 10*time.Second, false); fmt.Sprint(got) != "[10s 20s]" {
		t.Fatalf("after 3 failed claims, claimed %v; want the slot that failed (10s), then 20s", got)
	}
	f = &fakeSlots{now: base.Add(time.Second), refuse: fmt.Errorf("bad job: %w", ErrSlotRefused), stopAt: 2}
	if got := f.run(t, base, 10*time.Second, false); fmt.Sprint(got) != "[20s 30s]" {
		t.Fatalf("after a refused slot, claimed %v; want it skipped (20s, 30s)", got)
	}
}

// TestEnqueuerStopsScheduleGoingBack: a Next that returns a slot not
// after its input (here from the third slot on: the same time, then an
// earlier one) stops the schedule, logged, instead of claiming in a loop.
func TestEnqueuerStopsScheduleGoingBack(t *testing.T) {
	base := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, back := range []time.Duration{0, -time.Hour} {
		f := &fakeSlots{now: base.Add(time.Second), stopAt: -1}
		calls := 0
		next := func(t time.Time) time.Time {
			calls++
			if t.Before(base.Add(20 * time.Second)) {
				return t.Truncate(10 * time.Second).Add(10 * time.Second)
			}
			return t.Add(back)
		}
		var logged testlog.Buffer
		e := NewEnqueuer(EnqueuerConfig{Driver: f, Logger: logged.Logger(), Sleep: f.sleep})
		ctx, cancel := context.WithTimeout(t.Context(), 300*time.Millisecond)
		e.run(ctx, &runner{s: &Schedule{Name: "s", Next: next, Grace: time.Minute, Insert: f.insert}})
		cancel()
		if fmt.Sprint(f.claimed) != fmt.Sprint([]time.Time{base.Add(10 * time.Second), base.Add(20 * time.Second)}) {
			t.Errorf("back %v: claimed %v, want the slots at 10s and 20s only", back, f.claimed)
		}
		if calls > 20 {
			t.Errorf("back %v: Next called %d times in 300 ms, want the schedule stopped, not spinning", back, calls)
		}
		if !strings.Contains(logged.String(), "periodic schedule stopped: its Next returned a slot not after its input") {
			t.Errorf("back %v: log %q does not report the broken schedule", back, logged.String())
		}
	}
}

func TestLatestSlot(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	hourly := func(t time.Time) time.Time { return t.Truncate(time.Hour).Add(time.Hour) }
	second := func(t time.Time) time.Time { return t.Truncate(time.Second).Add(time.Second) }
	calls := 0
	counted := func(t time.Time) time.Time { calls++; return second(t) }
	for _, tt := range []struct {
		name        string
		next        func(time.Time) time.Time
		after, upTo time.Time
		want        time.Time
	}{
		{"none in range", hourly, base.Add(10 * time.Minute), base.Add(50 * time.Minute), time.Time{}},
		{"upTo is a slot", hourly, base, base.Add(3 * time.Hour), base.Add(3 * time.Hour)},
		{"after excluded", hourly, base.Add(time.Hour), base.Add(time.Hour + 30*time.Minute), time.Time{}},
		{"far back", counted, base, base.Add(365*24*time.Hour + 1500*time.Millisecond), base.Add(365*24*time.Hour + time.Second)},
		{"empty range", hourly, base, base, time.Time{}},
	} {
		got := LatestSlot(tt.next, tt.after, tt.upTo)
		if !got.Equal(tt.want) {
			t.Errorf("%s: LatestSlot = %v, want %v", tt.name, got, tt.want)
		}
	}
	if calls > 100 {
		t.Errorf("LatestSlot called next %d times over a year of one-second slots, want a few", calls)
	}
}

func TestEnqueuerAddRemoveWhileRunning(t *testing.T) {
	f := &fakeSlots{now: time.Now()}
	e := NewEnqueuer(EnqueuerConfig{Driver: f, Logger: discard})
	var mu sync.Mutex
	runs := map[string]int{}
	mk := func(name string) *Schedule {
		return &Schedule{Name: name, Grace: time.Minute,
			Next: func(t time.Time) time.Time { return t.Add(time.Hour) },
			Insert: func(context.Context, time.Time, time.Time, time.Time, Claim) (*driver.PeriodicInsertResult, error) {
				mu.Lock()
				runs[name]++
				mu.Unlock()
				return &driver.PeriodicInsertResult{}, nil
			}}
	}
	if !e.Add(mk("a")) || e.Add(mk("a")) {
		t.Fatal("Add of a new name must succeed and of a known one fail")
	}
	if err := e.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !e.Add(mk("b")) || len(e.Names()) != 2 {
		t.Fatalf("Add while running: names %v, want a and b", e.Names())
	}
	if !e.Remove("a") || e.Remove("a") {
		t.Fatal("Remove of a known name must succeed once")
	}
	if err := e.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if names := e.Names(); len(names) != 1 || names[0] != "b" {
		t.Fatalf("names after removing a: %v, want [b]", names)
	}
	// Added after Stop, a schedule is kept but starts no goroutine: one
	// started then would race Stop's wait for the others.
	if !e.Add(mk("c")) {
		t.Fatal("Add after Stop refused")
	}
	e.mu.Lock()
	launched := e.schedules["c"].cancel != nil
	e.mu.Unlock()
	if launched {
		t.Fatal("a schedule added after Stop started a goroutine")
	}
}

// TestEnqueuerWarnsOnlyMissedSlots: a process whose cursor is more than
// the grace behind the database clock (it was paused, or cut off from
// the database while the others were not) warns that slots were missed
// only when no process enqueued them: when the schedule's last slot is
// before the latest slot whose grace ran out. Else it fell behind alone,
// which it logs at Debug. A schedule that catches up learns which from
// its claim of that slot, one that does not from a read of its row.
func TestEnqueuerWarnsOnlyMissedSlots(t *testing.T) {
	base := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	passed := base.Add(4 * time.Minute) // the latest slot past its grace at now
	for _, tt := range []struct {
		name    string
		last    time.Time // the schedule's last slot in the database
		catchUp bool
		missed  bool
	}{
		{"others kept up", base.Add(5 * time.Minute), false, false},
		{"others kept up, catching up", base.Add(5 * time.Minute), true, false},
		{"others enqueued the passed slot", passed, false, false},
		{"others enqueued the passed slot, catching up", passed, true, false},
		{"no process enqueued the passed slot", passed.Add(-10 * time.Second), false, true},
		{"no process enqueued the passed slot, catching up", passed.Add(-10 * time.Second), true, true},
		{"no process enqueued any slot", base, false, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeSlots{now: base.Add(5*time.Minute + time.Second), last: tt.last, stopAt: -1}
			var logs testlog.Buffer
			logger := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
			e := NewEnqueuer(EnqueuerConfig{Driver: f, Logger: logger, Sleep: f.sleep})
			s := &Schedule{Name: "s", Next: func(t time.Time) time.Time { return t.Truncate(10 * time.Second).Add(10 * time.Second) },
				Grace: time.Minute, CatchUp: tt.catchUp, Insert: f.insert}
			// This process last dealt with base, then stalled.
			cursor, err := e.step(t.Context(), &runner{s: s}, s, base)
			if err != nil {
				t.Fatal(err)
			}
			if want := base.Add(5 * time.Minute); !cursor.Equal(want) {
				t.Errorf("cursor %v after the step, want %v", cursor, want)
			}
			warned := strings.Contains(logs.String(), "periodic slots missed")
			behind := strings.Contains(logs.String(), "fell behind")
			if warned != tt.missed || behind == tt.missed {
				t.Errorf("missed warned %v, fell behind logged %v; want the warning %v\nlog: %s", warned, behind, tt.missed, logs.String())
			}
			if tt.missed && !strings.Contains(logs.String(), "level=WARN") {
				t.Errorf("missed slots not logged as a warning: %s", logs.String())
			}
			if !tt.missed && strings.Contains(logs.String(), "level=WARN") {
				t.Errorf("a process that fell behind alone warned: %s", logs.String())
			}
			// The claim of the passed slot answers when the schedule
			// catches up: no statement more.
			if want := map[bool]int{true: 0, false: 1}[tt.catchUp]; f.listed != want {
				t.Errorf("the schedule's row read %d times, want %d", f.listed, want)
			}
			if caught := slices.Contains(f.claimed, passed); caught != (tt.catchUp && tt.missed) {
				t.Errorf("claimed %v: the passed slot caught up %v, want %v", f.claimed, caught, tt.catchUp && tt.missed)
			}
		})
	}
}

// TestEnqueuerKeepingUpReadsNoRow: a step within the grace reads the
// database clock and claims its slots, as before: no read of the
// schedule's row.
func TestEnqueuerKeepingUpReadsNoRow(t *testing.T) {
	base := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	f := &fakeSlots{now: base.Add(25 * time.Second), last: base.Add(10 * time.Second), stopAt: 3}
	if got := f.run(t, base, 10*time.Second, false); fmt.Sprint(got) != "[20s 30s 40s]" {
		t.Fatalf("claimed %v, want [20s 30s 40s]", got)
	}
	if f.listed != 0 {
		t.Errorf("the schedule's row read %d times by a process keeping up, want 0", f.listed)
	}
}
