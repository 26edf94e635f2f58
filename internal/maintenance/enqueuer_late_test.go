package maintenance

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/testlog"
)

// slowClaims is a fakeSlots whose first claim takes lag of the fake
// clock before it reaches the database (an insert middleware's lookup, a
// lock wait), and whose claims are refused as late past the deadline
// their Insert got, as the drivers refuse them.
type slowClaims struct {
	*fakeSlots
	lag       time.Duration
	deadlines map[time.Time][]time.Time // each slot's deadlines, by try
}

func (f *slowClaims) insert(ctx context.Context, slot, next, deadline time.Time, c Claim) (*driver.PeriodicInsertResult, error) {
	f.mu.Lock()
	f.deadlines[slot] = append(f.deadlines[slot], deadline)
	if f.tried == 0 {
		f.now = f.now.Add(f.lag)
	}
	late := !deadline.IsZero() && f.now.After(deadline) && (f.last.IsZero() || f.last.Before(slot))
	if late {
		f.tried++
	}
	f.mu.Unlock()
	if late {
		return &driver.PeriodicInsertResult{Late: true}, nil
	}
	return f.fakeSlots.insert(ctx, slot, next, deadline, c)
}

// runSlow runs a schedule every 10 s, grace 1 s, whose last slot is
// base, from base + 10 s (its next slot just due), with a first claim
// that takes 5 s, and returns the slots claimed, the deadlines each slot
// was tried with, and the log.
func runSlow(t *testing.T, base time.Time, catchUp bool, stopAt int) ([]time.Time, map[time.Time][]time.Time, string) {
	t.Helper()
	f := &slowClaims{fakeSlots: &fakeSlots{now: base.Add(10 * time.Second), last: base, stopAt: stopAt},
		lag: 5 * time.Second, deadlines: map[time.Time][]time.Time{}}
	var logged testlog.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	f.cancel = cancel
	e := NewEnqueuer(EnqueuerConfig{Driver: f, Logger: logged.Logger(), Sleep: f.sleep})
	s := &Schedule{Name: "s", Next: everyTen, Grace: time.Second, CatchUp: catchUp, Insert: f.insert}
	e.run(ctx, &runner{s: s})
	if len(f.claimed) != stopAt {
		t.Fatalf("claimed %v, want %d slots; log:\n%s", f.claimed, stopAt, logged.String())
	}
	return f.claimed, f.deadlines, logged.String()
}

// TestSlowClaimPastGraceMissed checks that a slot whose claim reaches
// the database after its grace ran out is not enqueued with CatchUpNone:
// the claim carries the deadline slot + Grace, its refusal as late
// leaves the slot to the next pass, which reports it missed and goes on
// with the next slot.
func TestSlowClaimPastGraceMissed(t *testing.T) {
	base := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	slow, next := base.Add(10*time.Second), base.Add(20*time.Second)
	claimed, deadlines, log := runSlow(t, base, false, 1)
	if !claimed[0].Equal(next) {
		t.Errorf("claimed %v, want only %v: %v was claimed 5 s after it, past its 1 s grace", claimed, next, slow)
	}
	if d := deadlines[slow]; len(d) != 1 || !d[0].Equal(slow.Add(time.Second)) {
		t.Errorf("the slow slot was tried with deadlines %v, want once with %v", d, slow.Add(time.Second))
	}
	if d := deadlines[next]; len(d) != 1 || !d[0].Equal(next.Add(time.Second)) {
		t.Errorf("the next slot was tried with deadlines %v, want once with %v", d, next.Add(time.Second))
	}
	if strings.Count(log, "periodic slots missed") != 1 || !strings.Contains(log, "latest_missed=2026-01-01T12:00:10") {
		t.Errorf("want one missed-slots warning for %v; log:\n%s", slow, log)
	}
}

// TestSlowClaimPastGraceCaughtUp checks that with CatchUpOne the slot
// refused as late is the one caught up, claimed with no deadline (the
// catch-up slot is past its grace by definition), then the next slot on
// time.
func TestSlowClaimPastGraceCaughtUp(t *testing.T) {
	base := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	slow, next := base.Add(10*time.Second), base.Add(20*time.Second)
	claimed, deadlines, log := runSlow(t, base, true, 2)
	if !claimed[0].Equal(slow) || !claimed[1].Equal(next) {
		t.Errorf("claimed %v, want %v caught up, then %v", claimed, slow, next)
	}
	if d := deadlines[slow]; len(d) != 2 || !d[0].Equal(slow.Add(time.Second)) || !d[1].IsZero() {
		t.Errorf("the slow slot was tried with deadlines %v, want its grace's end, then none (the catch-up)", d)
	}
	if strings.Count(log, "periodic slots missed") != 1 {
		t.Errorf("want one missed-slots warning; log:\n%s", log)
	}
}
