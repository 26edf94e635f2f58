package drivertest

import (
	"context"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// testNotifyWakesIdleWorkers: on a driver with LISTEN/NOTIFY, a job
// inserted by another client is picked up by an idle worker whose poll
// interval is an hour: only the wake-up hint can have woken it.
func testNotifyWakesIdleWorkers(e *clientEnv) {
	if _, ok := e.d.(driver.Notifier); !ok {
		e.Skip("driver has no wake-up notifications; workers poll")
	}
	picked := make(chan int64, 100)
	e.newClient(e.d, e.workers(func(_ context.Context, job *leasehold.Job[testArgs]) error {
		picked <- job.ID
		return nil
	}), func(c *leasehold.Config) { c.PollInterval = time.Hour })
	producer := e.newClient(e.h.OpenSecond(e.T, e.d), nil, nil)
	// The listener connects in the background: insert until a job is
	// picked up, so the test does not depend on when LISTEN took effect.
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(30 * time.Second)
	for {
		if _, err := producer.Insert(e.ctx, testArgs{N: 1}, nil); err != nil {
			e.Fatalf("Insert: %v", err)
		}
		select {
		case <-picked:
			return
		case <-deadline:
			e.Fatalf("no job picked up: the insert notification did not wake the worker")
		case <-tick.C:
		}
	}
}
