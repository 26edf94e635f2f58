package maintenance

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/leasetype"
)

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// fakeRescue hands out expired leases in batches of at most Limit, as the
// drivers do; the drivers themselves are tested against real databases
// by the conformance suite.
type fakeRescue struct {
	mu      sync.Mutex
	expired int
	calls   int
	decided []leasetype.JobState // what Decide said of a payments job, per call
	err     error
}

func (f *fakeRescue) RescueExpired(_ context.Context, p *driver.RescueParams) ([]*leasetype.RescuedJob, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls++
	f.decided = append(f.decided, p.Decide(&leasetype.JobRow{Queue: "payments", MaxAttempts: 5, Attempt: 1}).State)
	if f.err != nil {
		return nil, f.err
	}
	n := min(f.expired, p.Limit)
	f.expired -= n
	out := make([]*leasetype.RescuedJob, n)
	for i := range out {
		out[i] = &leasetype.RescuedJob{ID: int64(i + 1), NewState: leasetype.StatePending}
	}
	return out, nil
}

func TestRescuerPassMovesEveryBatch(t *testing.T) {
	f := &fakeRescue{expired: 2*rescueBatch + 5}
	var events atomic.Int64
	r := NewRescuer(RescuerConfig{Driver: f, FlagQueues: []string{"payments"}, Interval: time.Hour,
		Emit: func(ev leasetype.Event) {
			if ev.Kind == leasetype.EventRescued && ev.Rescued != nil {
				events.Add(1)
			}
		}, Logger: discard})
	moved, err := r.Pass(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(moved) != 2*rescueBatch+5 || f.calls != 3 || events.Load() != int64(len(moved)) {
		t.Fatalf("moved %d in %d calls with %d events; want %d in 3 calls, one event each",
			len(moved), f.calls, events.Load(), 2*rescueBatch+5)
	}
	if f.decided[0] != leasetype.StateStuck {
		t.Fatalf("the pass decided %v for a job of the flagged queue, want stuck", f.decided[0])
	}
}

func TestRescuerPassWrapsError(t *testing.T) {
	boom := errors.New("boom")
	r := NewRescuer(RescuerConfig{Driver: &fakeRescue{err: boom}, Emit: func(leasetype.Event) {}, Logger: discard})
	if _, err := r.Pass(context.Background()); !errors.Is(err, boom) {
		t.Fatalf("Pass = %v, want it to wrap the driver's error", err)
	}
}

func TestPeriodicRunsAtStartThenEveryInterval(t *testing.T) {
	var passes atomic.Int64
	p := &Periodic{Interval: 20 * time.Millisecond, Pass: func(context.Context) { passes.Add(1) }}
	if err := p.Stop(context.Background()); err != nil { // before Start: harmless
		t.Fatal(err)
	}
	p = &Periodic{Interval: 20 * time.Millisecond, Pass: func(context.Context) { passes.Add(1) }}
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	time.Sleep(70 * time.Millisecond)
	if err := p.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	after := passes.Load()
	if after < 2 {
		t.Fatalf("%d passes in 70 ms at a 20 ms interval, want the first at once and more after", after)
	}
	time.Sleep(50 * time.Millisecond)
	if passes.Load() != after {
		t.Fatal("a pass ran after Stop")
	}
	if err := p.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
}

type fakePurge struct{ left, calls int64 }

func (f *fakePurge) Purge(_ context.Context, p *driver.PurgeParams) (int64, error) {
	f.calls++
	n := min(f.left, int64(p.Limit))
	f.left -= n
	return n, nil
}

func TestPurgeDeletesInBatches(t *testing.T) {
	f := &fakePurge{left: purgeBatch + 1}
	n, err := Purge(context.Background(), f, time.Hour)
	if err != nil || n != purgeBatch+1 || f.calls != 2 {
		t.Fatalf("Purge = %d, %v in %d calls; want %d in 2", n, err, f.calls, purgeBatch+1)
	}
}
