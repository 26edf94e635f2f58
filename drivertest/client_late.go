package drivertest

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// heldDriver holds the claims (or the watcher passes) sent while late is
// set until release is closed, and then sends them: statements that
// reach the database late, through a stalled connection or after a wait
// for a pool's connection or SQLite's write lock.
type heldDriver struct {
	*faultDriver
	claims  bool // hold claims, else watcher passes
	late    atomic.Bool
	held    atomic.Int32
	release chan struct{}
	once    sync.Once
}

// newHeldDriver returns a heldDriver over d that holds claims, or watcher
// passes when claims is false.
func newHeldDriver(d driver.Driver, claims bool) *heldDriver {
	return &heldDriver{faultDriver: &faultDriver{Driver: d}, claims: claims, release: make(chan struct{})}
}

// hold waits for release when late is set.
func (h *heldDriver) hold(ctx context.Context) error {
	if !h.late.Load() {
		return nil
	}
	h.held.Add(1)
	select {
	case <-h.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Claim claims, late when claims are held.
func (h *heldDriver) Claim(ctx context.Context, p *driver.ClaimParams) ([]*leasehold.JobRow, error) {
	if h.claims {
		if err := h.hold(ctx); err != nil {
			return nil, err
		}
	}
	return h.faultDriver.Claim(ctx, p)
}

// RescueExpired runs a watcher pass, late when passes are held.
func (h *heldDriver) RescueExpired(ctx context.Context, p *driver.RescueParams) ([]*leasehold.RescuedJob, error) {
	if !h.claims {
		if err := h.hold(ctx); err != nil {
			return nil, err
		}
	}
	return h.faultDriver.Driver.RescueExpired(ctx, p)
}

// testLateStatementsLeaveOwnLease: job 1's handler returns, and the
// database then takes neither its outcome nor a heartbeat. A claim (or a
// watcher pass) the client sends while the lease is well inside its safe
// window reaches the database only after the lease expired there. It
// neither takes the lease over nor moves it: the handler runs once, and
// its completion is written once the database takes writes again.
func testLateStatementsLeaveOwnLease(e *clientEnv) {
	for _, claims := range []bool{true, false} {
		ld := newHeldDriver(e.d, claims)
		var runs sync.Map
		first := make(chan struct{})
		c := e.newClient(ld, e.workers(func(ctx context.Context, job *leasehold.Job[testArgs]) error {
			n, _ := runs.LoadOrStore(job.ID, new(atomic.Int32))
			if n.(*atomic.Int32).Add(1) == 1 && job.Args.N == 1 {
				ld.cutOff.Store(true)
				ld.holdFinish.Store(true)
				close(first)
			}
			return nil // a payment charged
		}), func(c *leasehold.Config) {
			c.LeaseTTL, c.HeartbeatInterval, c.LeaseSafetyMargin = 3*time.Second, 300*time.Millisecond, time.Second
			c.WatcherInterval, c.PollInterval = 50*time.Millisecond, 50*time.Millisecond
		})
		id := e.insertOpts(c, nil)
		e.waitGate(first, "job 1's handler")
		ld.late.Store(true)
		if claims {
			if _, err := c.Insert(e.ctx, testArgs{N: 2}, nil); err != nil { // wakes the queue: a claim
				e.Fatalf("Insert: %v", err)
			}
		}
		e.waitFor("a statement to be held", 5*time.Second, func() bool { return ld.held.Load() > 0 })
		e.waitExpired(id)
		ld.once.Do(func() { close(ld.release) })
		time.Sleep(500 * time.Millisecond) // the held statement, then more claims and passes
		ld.late.Store(false)
		ld.holdFinish.Store(false)
		ld.cutOff.Store(false)
		row := e.waitState(id, leasehold.StateCompleted, 30*time.Second)
		n, _ := runs.Load(id)
		if got := n.(*atomic.Int32).Load(); got != 1 || row.Attempt != 1 {
			e.Fatalf("late claims %v: job %d ran %d times, attempt %d (history %s); want once, attempt 1",
				claims, id, got, row.Attempt, fmtHistory(e.history(id)))
		}
		if err := c.Stop(e.ctx); err != nil {
			e.Fatalf("Stop: %v", err)
		}
	}
}
