package leasehold

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/leasehold/leasehold/driver"
)

// rescueBatch caps the jobs one watcher statement moves.
const rescueBatch = 1000

// runWatcher runs the stuck watcher (and the retention cleanup, when
// configured) every WatcherInterval until ctx ends, starting with one pass
// at once.
func (c *Client) runWatcher(ctx context.Context) {
	t := time.NewTicker(c.cfg.WatcherInterval)
	defer t.Stop()
	for {
		if _, err := c.RescueExpired(ctx); err != nil && ctx.Err() == nil {
			c.cfg.Logger.Warn("leasehold: stuck watcher pass failed", "err", err)
		}
		if c.cfg.FinishedRetention > 0 {
			if _, err := c.PurgeFinished(ctx, c.cfg.FinishedRetention); err != nil && ctx.Err() == nil {
				c.cfg.Logger.Warn("leasehold: retention cleanup failed", "err", err)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// RescueExpired runs one pass of the stuck watcher: every processing job
// whose lease has expired (database clock) goes back to pending, or to
// stuck in queues configured with FlagStuck, or to failed when its retry
// budget is spent, or to cancelled when an operator asked for it. It is a
// conditional update, so concurrent watchers are harmless. It returns the
// jobs moved.
func (c *Client) RescueExpired(ctx context.Context) ([]*RescuedJob, error) {
	var all []*RescuedJob
	for {
		moved, err := c.driver.RescueExpired(ctx, &driver.RescueParams{FlagQueues: c.flagQueues(), Limit: rescueBatch})
		if err != nil {
			return all, fmt.Errorf("leasehold: rescue expired leases: %w", err)
		}
		all = append(all, moved...)
		c.stats.rescued.Add(int64(len(moved)))
		for _, r := range moved {
			c.cfg.Logger.Info("leasehold: expired lease rescued", "job", r.ID, "kind", r.Kind,
				"queue", r.Queue, "attempt", r.Attempt, "owner", r.Owner, "state", r.NewState)
		}
		if len(moved) < rescueBatch {
			return all, nil
		}
	}
}

func (c *Client) flagQueues() []string {
	var qs []string
	for name, q := range c.cfg.Queues {
		if q.FlagStuck {
			qs = append(qs, name)
		}
	}
	sort.Strings(qs)
	return qs
}
