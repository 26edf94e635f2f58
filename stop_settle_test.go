package leasehold_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/leasetype"
	"github.com/leasehold/leasehold/sqlitedriver"
)

// slowCancelDriver is an SQLite driver whose watcher statement, once
// cancelled, takes lag to come back, as a statement on its way back from
// a distant database does.
type slowCancelDriver struct {
	*sqlitedriver.Driver
	lag      time.Duration
	started  chan struct{}
	once     sync.Once
	returned atomic.Bool
}

func (d *slowCancelDriver) RescueExpired(ctx context.Context, p *driver.RescueParams) ([]*leasetype.RescuedJob, error) {
	d.once.Do(func() { close(d.started) })
	<-ctx.Done()
	time.Sleep(d.lag)
	d.returned.Store(true)
	return nil, ctx.Err()
}

// TestStoppedWaitsForCancelledStatements: Stop with a context already
// done cancels the watcher without waiting for it; Stopped closes only
// once the watcher's cancelled statement has returned, so that the caller
// may close the pool then.
func TestStoppedWaitsForCancelledStatements(t *testing.T) {
	base, _ := lifecycleSetup(t, leasehold.NewWorkers())
	d := &slowCancelDriver{Driver: base, lag: 300 * time.Millisecond, started: make(chan struct{})}
	c, err := leasehold.NewClient(leasehold.Config{Driver: d, Workers: leasehold.NewWorkers(), Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	if err := c.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	waitChan(t, d.started, "the watcher's statement")
	done, cancel := context.WithCancel(context.Background())
	cancel()
	_ = c.Stop(done)
	waitChan(t, c.Stopped(), "Stopped")
	if !d.returned.Load() {
		t.Fatal("Stopped closed while the watcher's cancelled statement was still running")
	}
}
