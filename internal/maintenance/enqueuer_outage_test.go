package maintenance

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// outageSlots is fakeSlots whose database clock cannot be read in
// [from, until), the enqueuer's first statement of each look.
type outageSlots struct {
	fakeSlots
	from, until time.Time
}

func (f *outageSlots) Now(ctx context.Context) (time.Time, error) {
	f.mu.Lock()
	down := !f.now.Before(f.from) && f.now.Before(f.until)
	f.mu.Unlock()
	if down {
		return time.Time{}, errors.New("database unreachable")
	}
	return f.fakeSlots.Now(ctx)
}

// TestEnqueuerOutageKeepsSlotsOnTime: after an outage long enough for
// the backoff to reach its 30 s ceiling, the enqueuer still looks again
// within an eighth of the grace, so the slots that are on time when the
// database answers again are claimed, not skipped as missed: on an
// outage mid-run (run's retries) and at start (begin's). Slots every
// 10 s.
func TestEnqueuerOutageKeepsSlotsOnTime(t *testing.T) {
	base := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	sec := func(s float64) time.Time { return base.Add(time.Duration(s * float64(time.Second))) }
	for _, tt := range []struct {
		name        string
		start, last time.Time // the process's start; the schedule's last slot (zero: none)
		from, until time.Time // the outage
		grace       time.Duration
		stopAt      int
		want        string
	}{
		// Slot 100 s is on time until 105 s; the database answers from 100 s.
		{"short grace", sec(1), time.Time{}, sec(10.5), sec(100), 5 * time.Second, 3, "[10s 1m40s 1m50s]"},
		// Slot 30 s is on time until 90 s; the database answers from 82 s.
		{"default grace", sec(1), time.Time{}, sec(10.5), sec(82), time.Minute, 2, "[10s 30s]"},
		// Down from before the start: begin retries; slot 100 s is on
		// time until 105 s.
		{"down at start", sec(1), base, base, sec(100), 5 * time.Second, 2, "[1m40s 1m50s]"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := &outageSlots{fakeSlots: fakeSlots{now: tt.start, last: tt.last, stopAt: tt.stopAt}, from: tt.from, until: tt.until}
			ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
			defer cancel()
			f.cancel = cancel
			e := NewEnqueuer(EnqueuerConfig{Driver: f, Logger: discard, Sleep: f.sleep})
			every := 10 * time.Second
			e.run(ctx, &runner{s: &Schedule{Name: "s", Next: func(t time.Time) time.Time { return t.Truncate(every).Add(every) },
				Grace: tt.grace, Insert: f.insert}})
			var got []time.Duration
			for _, c := range f.claimed {
				got = append(got, c.Sub(base))
			}
			if fmt.Sprint(got) != tt.want {
				t.Fatalf("claimed %v; want %s: a slot on time when the database answered again was skipped", got, tt.want)
			}
		})
	}
}

// TestRetryLimit: the wait after a failed statement is an eighth of the
// schedule's grace, within [0.5 s, 30 s].
func TestRetryLimit(t *testing.T) {
	for grace, want := range map[time.Duration]time.Duration{
		time.Second:      500 * time.Millisecond,
		5 * time.Second:  625 * time.Millisecond,
		time.Minute:      7500 * time.Millisecond,
		time.Hour:        30 * time.Second,
		24 * time.Hour:   30 * time.Second,
		0:                500 * time.Millisecond,
		10 * time.Minute: 30 * time.Second,
	} {
		if got := retryLimit(grace); got != want {
			t.Errorf("retryLimit(%v) = %v, want %v", grace, got, want)
		}
	}
}
