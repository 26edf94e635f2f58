package work

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/sqlitedriver"
)

// Fatal reports whether err is a database failure no retry mends: the
// SQLite file removed or replaced under the worker (its path no longer
// names the file it opened), or corrupt.
func Fatal(err error) bool {
	return errors.Is(err, sqlitedriver.ErrFileReplaced) || errors.Is(err, sqlitedriver.ErrCorrupt)
}

// fatalWatch stops a worker on the first fatal failure of a claim, of the
// probe for queues with work, of a heartbeat or of an outcome's write:
// the client would retry it forever, logging warnings, while the jobs it
// should run wait (in the new file, or in a restored one). The probe runs
// every poll interval, so an idle worker notices too.
type fatalWatch struct {
	gone chan error // holds the first fatal failure, until err reads it
	mu   sync.Mutex
	got  error // the failure err read
}

// watchFatal follows c's failure events until ctx ends; on the first
// fatal one it records the error and calls stop.
func watchFatal(ctx context.Context, c *leasehold.Client, stop context.CancelFunc) *fatalWatch {
	w := &fatalWatch{gone: make(chan error, 1)}
	events, unsubscribe := c.Subscribe(leasehold.EventClaimFailed, leasehold.EventHeartbeatFailed, leasehold.EventFinishFailed)
	go func() {
		defer unsubscribe()
		for {
			select {
			case <-ctx.Done():
				return
			case ev, ok := <-events:
				if !ok {
					return
				}
				if Fatal(ev.Err) {
					w.gone <- ev.Err
					stop()
					return
				}
			}
		}
	}()
	return w
}

// err returns the failure that stopped the worker, if any, the same at
// every call.
func (w *fatalWatch) err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.got == nil {
		select {
		case w.got = <-w.gone:
		default:
		}
	}
	return w.got
}

// WatchFile calls stop with the error, and returns, once the SQLite file
// drv opened is removed or replaced (checked every period), so that a
// process serving from it (leasehold serve) stops as a worker does,
// instead of answering every request with an error it cannot mend. It
// returns when ctx is done; a driver that did not open a file of its own
// is never checked.
func WatchFile(ctx context.Context, drv driver.Driver, every time.Duration, stop context.CancelCauseFunc) {
	f, ok := drv.(interface{ CheckFile() error })
	if !ok {
		return
	}
	tick(ctx, every, func() bool {
		if err := f.CheckFile(); err != nil {
			stop(err)
			return false
		}
		return true
	})
}
