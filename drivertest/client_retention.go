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

// testRetentionKeepsRecent: FinishedRetention is an age, not a switch:
// pass after watcher pass, a job finished more recently than the
// retention is kept, while one finished longer ago is purged.
func testRetentionKeepsRecent(e *clientEnv) {
	const retention, interval = time.Second, 50 * time.Millisecond
	c := e.newClient(e.d, e.workers(func(context.Context, *leasehold.Job[testArgs]) error { return nil }),
		func(c *leasehold.Config) { c.FinishedRetention, c.WatcherInterval = retention, interval })
	old := e.insertOpts(c, nil)
	e.waitFinishedKept(old, retention)
	time.Sleep(retention) // the old job ages past the retention
	inserted := time.Now()
	recent := e.insertOpts(c, nil)
	e.waitFinishedKept(recent, retention)
	e.waitFor("the job finished before the retention to be purged", 30*time.Second, func() bool {
		_, err := e.d.GetJob(e.ctx, old)
		return errors.Is(err, leasehold.ErrJobNotFound)
	})
	// The recent job is looked at at least once, and then until it is
	// nearly as old as the retention: some fifteen passes.
	for checked := false; !checked || time.Since(inserted) < retention*3/4; checked = true {
		if _, err := e.d.GetJob(e.ctx, recent); err != nil {
			e.Fatalf("job inserted %v ago, FinishedRetention %v: %v; want it kept",
				time.Since(inserted).Round(time.Millisecond), retention, err)
		}
		time.Sleep(interval)
	}
}

// waitFinishedKept waits until job id completes, failing the test if it
// is deleted first: a job is not purged as it finishes, retention being
// longer.
func (e *clientEnv) waitFinishedKept(id int64, retention time.Duration) {
	e.Helper()
	e.waitFor("the job to complete", 30*time.Second, func() bool {
		row, err := e.d.GetJob(e.ctx, id)
		if err != nil {
			e.Fatalf("job %d before or as it completed, FinishedRetention %v: %v; want it kept", id, retention, err)
		}
		return row.State == leasehold.StateCompleted
	})
}
