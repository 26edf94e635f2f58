package engine

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/leasehold/leasehold/leasetype"
)

// TestWatchdogCancelsAtSafeWindowEnd: the handler of a lease that is not
// renewed is cancelled when its safe window ends (TTL - Margin after the
// send), give or take the runtime's wake-up latency, and so before the
// TTL; not at the watchdog's next look at the leases after that, which
// would spend part of the margin (all of it, for a margin below that
// period) waiting. The lease's window ends halfway between two of those
// looks, Margin/4 apart, so a watchdog that only looks every Margin/4
// cancels it Margin/8 late or more, while the latency allowed is three
// quarters of that (150 ms): far more than a loaded machine adds (58 ms
// seen on two busy cores, where a third of it failed the test).
func TestWatchdogCancelsAtSafeWindowEnd(t *testing.T) {
	const ttl, margin = 4 * time.Second, 1600 * time.Millisecond
	poll := watchdogPoll(margin)
	win := &Window{TTL: ttl, Margin: margin, Clock: NewClock()}
	leases := NewLeases()
	h := NewHeartbeater(HeartbeaterConfig{Leases: leases, Window: win, Interval: time.Hour,
		Emit: func(leasetype.Event) {}, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	start := win.Clock.Now()
	// The window ends 5.5 polls after start: between two looks.
	sent := start + int64(5*poll+poll/2) - int64(win.Safe())
	l := watchedLease(win, 1, sent)
	leases.add(l)
	if err := h.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = h.Stop(context.Background()) }()
	select {
	case <-l.ctx.Done():
	case <-time.After(2 * ttl):
		t.Fatalf("handler not cancelled %v after the send (TTL %v)", 2*ttl, ttl)
	}
	at := time.Duration(win.Clock.Now() - sent)
	if late := at - win.Safe(); late < 0 || late >= poll*3/8 || at >= ttl {
		t.Fatalf("handler cancelled %v after the send: %v past its safe window %v (TTL %v); want it past the window by less than %v",
			at, late, win.Safe(), ttl, poll*3/8)
	}
	if cause := context.Cause(l.ctx); cause != errNotRenewed {
		t.Fatalf("cancel cause %v, want %v", cause, errNotRenewed)
	}
}

// watchedLease returns a running lease of job id, renewed last by a
// statement sent at the Clock reading sent.
func watchedLease(win *Window, id int64, sent int64) *Lease {
	l := &Lease{Row: &leasetype.JobRow{ID: id, Attempt: 1}, window: win}
	l.value = leaseValue{Context: context.Background(), l: l}
	l.ctx, l.cancel = context.WithCancelCause(&l.value)
	l.renewedAt.Store(sent)
	return l
}
