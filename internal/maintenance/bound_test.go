package maintenance

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/testlog"
	"github.com/leasehold/leasehold/leasetype"
)

// recoverWithin is how long the tests below wait for the pass after a
// hung one: many times the short bounds they configure, and far less
// than forever, which is how long the hung call waits unbounded.
const recoverWithin = 5 * time.Second

// hangFirst is a database whose first call hangs until its context is
// done, as a pooled connection to a server that vanished without
// resetting it does, and whose later calls (on fresh connections) answer.
type hangFirst struct{ calls atomic.Int32 }

// call is one call: it returns the first one's context error once that
// context is done, and nil at once for the others.
func (h *hangFirst) call(ctx context.Context) error {
	if h.calls.Add(1) == 1 {
		<-ctx.Done()
		return ctx.Err()
	}
	return nil
}

// TestPeriodicTimeoutEndsHungPass: a pass that hangs is cut off at
// Timeout, with a cause that says so, and the next pass runs.
func TestPeriodicTimeoutEndsHungPass(t *testing.T) {
	var h hangFirst
	next := make(chan struct{})
	var once sync.Once
	var cause atomic.Value
	p := &Periodic{Interval: 20 * time.Millisecond, Timeout: 200 * time.Millisecond, Pass: func(ctx context.Context) {
		if err := h.call(ctx); err != nil {
			cause.Store(context.Cause(ctx))
			return
		}
		once.Do(func() { close(next) })
	}}
	if err := p.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = p.Stop(context.Background()) }()
	select {
	case <-next:
	case <-time.After(recoverWithin):
		t.Fatalf("no pass ran in %v after the first hung, with a Timeout of %v", recoverWithin, p.Timeout)
	}
	var te *timeoutError
	if c, _ := cause.Load().(error); !errors.As(c, &te) || te.after != p.Timeout {
		t.Fatalf("the hung pass ended with cause %v, want its timeout of %v", c, p.Timeout)
	}
}

// TestPeriodicStopCancelsBoundedPass: Stop still cancels a pass in
// progress at once, however far its bound, and the failure of a pass
// cancelled by Stop is not logged.
func TestPeriodicStopCancelsBoundedPass(t *testing.T) {
	var logs testlog.Buffer
	entered := make(chan struct{})
	p := &Periodic{Interval: time.Hour, Timeout: time.Hour, Pass: func(ctx context.Context) {
		close(entered)
		<-ctx.Done()
		logFailure(ctx, logs.Logger(), "pass failed", ctx.Err())
	}}
	if err := p.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	<-entered
	start := time.Now()
	if err := p.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > recoverWithin {
		t.Errorf("Stop took %v with a pass in progress, want it cancelled at once", took)
	}
	if logs.String() != "" {
		t.Errorf("a pass cancelled by Stop logged %q, want nothing", logs.String())
	}
}

// TestServiceBounds: each service's pass is bounded by its interval, and
// by its least bound at least.
func TestServiceBounds(t *testing.T) {
	rescuer := func(iv time.Duration) time.Duration {
		return NewRescuer(RescuerConfig{Interval: iv, Logger: discard}).Timeout
	}
	retainer := func(iv time.Duration) time.Duration { return NewRetainer(nil, nil, time.Hour, iv, discard).Timeout }
	recorder := func(iv time.Duration) time.Duration { return NewRecorder(nil, &Tally{}, iv, discard).periodic.Timeout }
	for _, tt := range []struct {
		name     string
		timeout  func(time.Duration) time.Duration
		interval time.Duration
		want     time.Duration
	}{
		{"watcher, short interval", rescuer, 200 * time.Millisecond, passTimeout},
		{"watcher, long interval", rescuer, 5 * time.Minute, 5 * time.Minute},
		{"retention, short interval", retainer, 30 * time.Second, purgeTimeout},
		{"retention, long interval", retainer, time.Hour, time.Hour},
		{"recorder, short interval", recorder, 10 * time.Second, passTimeout},
		{"recorder, long interval", recorder, time.Minute, time.Minute},
	} {
		if got := tt.timeout(tt.interval); got != tt.want {
			t.Errorf("%s (%v): Timeout %v, want %v", tt.name, tt.interval, got, tt.want)
		}
	}
	if got := NewEnqueuer(EnqueuerConfig{}).cfg.Timeout; got != passTimeout {
		t.Errorf("enqueuer: Timeout %v, want %v", got, passTimeout)
	}
}

// hungRescue is a driver whose first RescueExpired hangs (hangFirst) and
// whose next one moves the one expired lease.
type hungRescue struct {
	hangFirst
	moved atomic.Bool
}

func (h *hungRescue) RescueExpired(ctx context.Context, _ *driver.RescueParams) ([]*leasetype.RescuedJob, error) {
	if err := h.call(ctx); err != nil {
		return nil, err
	}
	if h.moved.Swap(true) {
		return nil, nil
	}
	return []*leasetype.RescuedJob{{ID: 7, NewState: leasetype.StateStuck}}, nil
}

// TestRescuerHungPassTimesOut: the stuck watcher's pass that hangs on the
// database is cut off at its bound, logged as timed out, and the next
// pass moves the expired lease.
func TestRescuerHungPassTimesOut(t *testing.T) {
	var logs testlog.Buffer
	h := &hungRescue{}
	rescued := make(chan int64, 1)
	r := NewRescuer(RescuerConfig{Driver: h, Interval: 20 * time.Millisecond, Logger: logs.Logger(),
		Emit: func(ev leasetype.Event) {
			if ev.Kind == leasetype.EventRescued {
				rescued <- ev.Rescued.ID
			}
		}})
	r.Timeout = 200 * time.Millisecond
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Stop(context.Background()) }()
	select {
	case <-rescued:
	case <-time.After(recoverWithin):
		t.Fatalf("the expired lease was not moved in %v after the watcher's first pass hung (bound %v)", recoverWithin, r.Timeout)
	}
	if err := r.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := logs.String(); !strings.Contains(got, "stuck watcher pass failed (timed out)") || !strings.Contains(got, "timeout=200ms") {
		t.Errorf("log %q, want the hung pass reported as timed out after 200ms", got)
	}
}

// hungPurge is a fakePurge whose first call hangs (hangFirst).
type hungPurge struct {
	hangFirst
	mu sync.Mutex
	fakePurge
}

func (h *hungPurge) Purge(ctx context.Context, p *driver.PurgeParams) (int64, error) {
	if err := h.call(ctx); err != nil {
		return 0, err
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.fakePurge.Purge(ctx, p)
}

func (h *hungPurge) left() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.fakePurge.left
}

// TestRetainerHungPassThenPurges: a retention pass that hangs is cut off
// at its bound, and the next one deletes every batch.
func TestRetainerHungPassThenPurges(t *testing.T) {
	h := &hungPurge{fakePurge: fakePurge{left: purgeBatch + 1}}
	r := NewRetainer(h, []string{"q"}, time.Hour, 20*time.Millisecond, discard)
	r.Timeout = 200 * time.Millisecond
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = r.Stop(context.Background()) }()
	for deadline := time.Now().Add(recoverWithin); h.left() > 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("%d jobs left to purge %v after the first pass hung (bound %v), want none", h.left(), recoverWithin, r.Timeout)
		}
	}
}

// hungWriter is a countsWriter whose first write hangs (hangFirst).
type hungWriter struct {
	hangFirst
	countsWriter
}

func (h *hungWriter) RecordThroughput(ctx context.Context, p *driver.ThroughputParams) error {
	if err := h.call(ctx); err != nil {
		return err
	}
	return h.countsWriter.RecordThroughput(ctx, p)
}

func (h *hungWriter) jobs() int64 {
	h.mu.Lock()
	defer h.mu.Unlock()
	var n int64
	for _, c := range h.counts {
		n += c.Jobs
	}
	return n
}

// TestRecorderHungFlushKeepsCounts: a flush that hangs is cut off at its
// bound and puts its counts back; the next flush writes them, once.
func TestRecorderHungFlushKeepsCounts(t *testing.T) {
	h := &hungWriter{}
	var tally Tally
	tally.Add("q", leasetype.OutcomeCompleted)
	r := NewRecorder(h, &tally, 20*time.Millisecond, discard)
	r.periodic.Timeout = 200 * time.Millisecond
	if err := r.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(recoverWithin); h.jobs() == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			_ = r.Stop(context.Background())
			t.Fatalf("nothing written %v after the first flush hung (bound %v)", recoverWithin, r.periodic.Timeout)
		}
	}
	_ = r.Stop(context.Background())
	if n := h.jobs(); n != 1 {
		t.Fatalf("%d jobs written, want the one counted, once", n)
	}
}

// hungSlots is a fakeSlots whose first Now hangs (hangFirst).
type hungSlots struct {
	hangFirst
	*fakeSlots
}

func (h *hungSlots) Now(ctx context.Context) (time.Time, error) {
	if err := h.call(ctx); err != nil {
		return time.Time{}, err
	}
	return h.fakeSlots.Now(ctx)
}

// TestEnqueuerHungCallsTimeOut: the enqueuer's read of the database clock
// and its claim of a slot, each hanging once, are cut off at its Timeout,
// logged as timed out, and retried.
func TestEnqueuerHungCallsTimeOut(t *testing.T) {
	base := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	f := &fakeSlots{now: base.Add(time.Second), stopAt: 2}
	var insertHang hangFirst
	insert := func(ctx context.Context, slot, next, deadline time.Time, claim Claim) (*driver.PeriodicInsertResult, error) {
		if err := insertHang.call(ctx); err != nil {
			return nil, err
		}
		return f.insert(ctx, slot, next, deadline, claim)
	}
	var logs testlog.Buffer
	e := NewEnqueuer(EnqueuerConfig{Driver: &hungSlots{fakeSlots: f}, Logger: logs.Logger(), Sleep: f.sleep,
		Timeout: 200 * time.Millisecond})
	ctx, cancel := context.WithTimeout(t.Context(), 2*recoverWithin)
	defer cancel()
	f.cancel = cancel
	e.run(ctx, &runner{s: &Schedule{Name: "s", Grace: time.Minute, Insert: insert,
		Next: func(t time.Time) time.Time { return t.Truncate(10 * time.Second).Add(10 * time.Second) }}})
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		t.Fatalf("claimed %v in %v with a clock read and a claim hanging once (Timeout 200ms), want 2 slots",
			f.claimed, 2*recoverWithin)
	}
	if got := fmt.Sprint(f.claimed); got != fmt.Sprint([]time.Time{base.Add(10 * time.Second), base.Add(20 * time.Second)}) {
		t.Errorf("claimed %v, want the slots at 10s and 20s", got)
	}
	if n := strings.Count(logs.String(), "failed; retrying (timed out)"); n != 2 {
		t.Errorf("log %q reports %d calls timed out, want 2", logs.String(), n)
	}
}
