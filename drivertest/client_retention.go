package drivertest

import (
	"context"
	"errors"
	"time"

	"github.com/leasehold/leasehold"
)

// testRetentionCleaner: with FinishedRetention set, the watcher deletes
// finished jobs past it and leaves unfinished ones alone.
func testRetentionCleaner(e *clientEnv) {
	c := e.newClient(e.d, e.workers(func(context.Context, *leasehold.Job[testArgs]) error { return nil }),
		func(c *leasehold.Config) {
			c.FinishedRetention, c.WatcherInterval = time.Millisecond, 50*time.Millisecond
		})
	done := e.insertOpts(c, nil)
	later := e.insertOpts(c, &leasehold.InsertOpts{RunIn: time.Hour})
	e.waitFor("the finished job to be purged", 30*time.Second, func() bool {
		_, err := e.d.GetJob(e.ctx, done)
		return errors.Is(err, leasehold.ErrJobNotFound)
	})
	if row, err := e.d.GetJob(e.ctx, later); err != nil || row.State != leasehold.StatePending {
		e.Fatalf("scheduled job after cleanup: %+v, %v; want it kept, pending", row, err)
	}
}
