package leasehold_test

import (
	"errors"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// TestRetentionWithoutWatcher: FinishedRetention deletes old finished jobs
// in a client with DisableWatcher too, on every driver: the stuck watcher
// may run elsewhere (`leasehold watch`), which deletes nothing.
func TestRetentionWithoutWatcher(t *testing.T) {
	const retention, interval = 200 * time.Millisecond, 50 * time.Millisecond
	eachDriver(t, func(t *testing.T, d driver.Driver) {
		c, err := leasehold.NewClient(leasehold.Config{Driver: d, DisableWatcher: true,
			FinishedRetention: retention, WatcherInterval: interval})
		if err != nil {
			t.Fatal(err)
		}
		ctx := t.Context()
		res, err := c.Insert(ctx, leasehold.RawArgs{KindName: "k"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.CancelJob(ctx, res.Job.ID); err != nil { // finished: cancelled
			t.Fatal(err)
		}
		if err := c.Start(ctx); err != nil {
			t.Fatal(err)
		}
		defer func() { _ = c.Stop(ctx) }()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(interval) {
			_, err := c.GetJob(ctx, res.Job.ID)
			if errors.Is(err, leasehold.ErrJobNotFound) {
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if time.Now().After(deadline) {
				t.Fatalf("job finished more than 10 s ago still kept with FinishedRetention %v and DisableWatcher", retention)
			}
		}
	})
}
