package maintenance

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/testlog"
)

// everyTen is the slot function of a schedule every 10 s.
func everyTen(t time.Time) time.Time { return t.Truncate(10 * time.Second).Add(10 * time.Second) }

// TestMissedWarnedOnceAcrossRetries checks that a CatchUpNone schedule
// back after downtime, whose first on-time claim fails a few times (a
// database that flaps as it comes back), warns of the missed slots once:
// the retries start after the gap step already dealt with, not before
// it.
func TestMissedWarnedOnceAcrossRetries(t *testing.T) {
	base := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	f := &fakeSlots{now: base.Add(10 * time.Minute), last: base, failures: 3, stopAt: 1}
	var logged testlog.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	f.cancel = cancel
	e := NewEnqueuer(EnqueuerConfig{Driver: f, Logger: logged.Logger(), Sleep: f.sleep})
	s := &Schedule{Name: "s", Next: everyTen, Grace: time.Minute, Insert: f.insert}
	e.run(ctx, &runner{s: s})
	if len(f.claimed) != 1 {
		t.Fatalf("claimed %v, want one on-time slot; log:\n%s", f.claimed, logged.String())
	}
	if n := strings.Count(logged.String(), "periodic slots missed"); n != 1 {
		t.Errorf("\"periodic slots missed\" logged %d times for one gap, want once; log:\n%s", n, logged.String())
	}
	if f.listed != 1 {
		t.Errorf("the schedule's row was read %d times to tell whether its gap was missed, want once", f.listed)
	}
}

// TestCatchUpSlotTriedOnceAcrossRetries checks that a CatchUpOne
// schedule back after downtime claims its catch-up slot once although
// the on-time claim after it fails a few times: the retries do not run
// the catch-up slot's Args and middleware again, nor take its refusal,
// as taken by this process, for other processes having kept the
// schedule going.
func TestCatchUpSlotTriedOnceAcrossRetries(t *testing.T) {
	base := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	f := &fakeSlots{now: base.Add(10 * time.Minute), last: base, stopAt: 2}
	catchUp, onTime := base.Add(540*time.Second), base.Add(550*time.Second)
	failOnTime := 3
	var logged testlog.Buffer
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	f.cancel = cancel
	tries := map[time.Time]int{}
	insert := func(ctx context.Context, slot, next, deadline time.Time, c Claim) (*driver.PeriodicInsertResult, error) {
		tries[slot]++
		if slot.Equal(onTime) && failOnTime > 0 {
			failOnTime--
			return nil, errors.New("database unreachable")
		}
		return f.insert(ctx, slot, next, deadline, c)
	}
	e := NewEnqueuer(EnqueuerConfig{Driver: f, Logger: logged.Logger(), Sleep: f.sleep})
	s := &Schedule{Name: "s", Next: everyTen, Grace: time.Minute, CatchUp: true, Insert: insert}
	e.run(ctx, &runner{s: s})
	if len(f.claimed) != 2 || !f.claimed[0].Equal(catchUp) || !f.claimed[1].Equal(onTime) {
		t.Fatalf("claimed %v, want the catch-up slot %v then %v", f.claimed, catchUp, onTime)
	}
	if n := tries[catchUp]; n != 1 {
		t.Errorf("the catch-up slot was tried %d times, want once", n)
	}
	if n := tries[onTime]; n != 4 {
		t.Errorf("the on-time slot was tried %d times, want 4 (3 failures, then the claim)", n)
	}
	if log := logged.String(); strings.Contains(log, "fell behind") || strings.Count(log, "periodic slots missed") != 1 {
		t.Errorf("want one missed-slots warning and no \"fell behind\"; log:\n%s", log)
	}
}
