package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/leasehold/leasehold/leasetype"
)

// overdueLease returns a lease held in leases whose safe window passed
// an hour ago, and which the database (holding nothing) no longer holds.
func overdueLease(leases *Leases, win *Window) *Lease {
	row := &leasetype.JobRow{ID: 1, Attempt: 1, Kind: "k", Queue: "q", MaxAttempts: 3}
	l := &Lease{Row: row, window: win}
	l.value = leaseValue{Context: context.Background(), l: l}
	l.ctx, l.cancel = context.WithCancelCause(&l.value)
	l.renewedAt.Store(win.Clock.Now() - int64(time.Hour))
	leases.add(l)
	return l
}

// TestLeaseLostOnceWhenWatchdogAndHeartbeatRace: the watchdog gives up a
// lease and a heartbeat reply finds it gone from the database at the same
// moment (the reply settled between the watchdog's check and its cancel):
// one EventLeaseLost, and only the watchdog's flag, not one of each.
func TestLeaseLostOnceWhenWatchdogAndHeartbeatRace(t *testing.T) {
	leases := NewLeases()
	win := &Window{TTL: 3 * time.Second, Margin: 500 * time.Millisecond, Clock: NewClock()}
	rec := &recorder{}
	var hb *Heartbeater
	beaten := false
	emit := func(ev leasetype.Event) {
		rec.emit(ev)
		if ev.Kind == leasetype.EventLeaseLost && errors.Is(ev.Err, leasetype.ErrLeaseNotRenewed) && !beaten {
			beaten = true
			hb.Beat(context.Background()) // the heartbeat's reply lands before the watchdog's cancel
		}
	}
	hb = NewHeartbeater(HeartbeaterConfig{Renewer: newFakeDB(), Leases: leases, Window: win, Owner: "w1",
		Interval: time.Second, Emit: emit, Logger: discard})
	l := overdueLease(leases, win)
	hb.expireOverdue()
	if !beaten {
		t.Fatal("the watchdog did not give the lease up")
	}
	if n := rec.count(leasetype.EventLeaseLost); n != 1 {
		t.Errorf("%d EventLeaseLost for one lease; want 1", n)
	}
	if l.lostInDB.Load() || !l.expiredLocally.Load() {
		t.Errorf("lostInDB %v, expiredLocally %v; want only the watchdog's flag", l.lostInDB.Load(), l.expiredLocally.Load())
	}
	if got := context.Cause(l.ctx); !errors.Is(got, leasetype.ErrLeaseNotRenewed) {
		t.Errorf("handler's cause %v; want the watchdog's", got)
	}
}

// TestLeaseLostAfterHandlerEndedSaysNothing: once the handler's end is
// claimed (ended, before decide), neither a heartbeat finding the lease
// gone nor the watchdog reports it lost, and a flag stored by one that
// came first is seen by the handler's end.
func TestLeaseLostAfterHandlerEndedSaysNothing(t *testing.T) {
	leases := NewLeases()
	win := &Window{TTL: 3 * time.Second, Margin: 500 * time.Millisecond, Clock: NewClock()}
	rec := &recorder{}
	hb := NewHeartbeater(HeartbeaterConfig{Renewer: newFakeDB(), Leases: leases, Window: win, Owner: "w1",
		Interval: time.Second, Emit: rec.emit, Logger: discard})
	l := overdueLease(leases, win)
	if !l.end(endDone) {
		t.Fatal("the handler's end did not come first")
	}
	hb.Beat(context.Background())
	hb.expireOverdue()
	if n := rec.count(leasetype.EventLeaseLost); n != 0 {
		t.Errorf("%d EventLeaseLost after the handler ended; want none", n)
	}
	if l.lostInDB.Load() || l.expiredLocally.Load() {
		t.Errorf("lostInDB %v, expiredLocally %v after the handler ended; want neither", l.lostInDB.Load(), l.expiredLocally.Load())
	}

	first := overdueLease(NewLeases(), win)
	first.endedBy.Store(endLost) // a heartbeat won, and has not stored its flag yet
	if won := first.end(endDone); won || !first.lostInDB.Load() {
		t.Errorf("the handler's end after a heartbeat's: won %v, lostInDB %v; want lost, and the flag seen", won, first.lostInDB.Load())
	}
}
