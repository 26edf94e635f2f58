package maintenance

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/leasehold/leasehold/driver"
)

// purgeBatch caps the jobs one purge statement deletes.
const purgeBatch = 10_000

// PurgeDriver is the part of the driver retention calls.
type PurgeDriver interface {
	Purge(ctx context.Context, p *driver.PurgeParams) (int64, error)
}

// Purge deletes the finished jobs (and their history) of every queue that
// finished more than olderThan ago, in batches, and returns how many it
// deleted.
func Purge(ctx context.Context, d PurgeDriver, olderThan time.Duration) (int64, error) {
	return PurgeQueues(ctx, d, nil, olderThan)
}

// PurgeQueues is Purge for the finished jobs of queues only (nil: every
// queue; empty: none, driver.PurgeParams.Queues).
func PurgeQueues(ctx context.Context, d PurgeDriver, queues []string, olderThan time.Duration) (int64, error) {
	var total int64
	for {
		n, err := d.Purge(ctx, &driver.PurgeParams{OlderThan: olderThan, Limit: purgeBatch, Queues: queues})
		total += n
		if err != nil {
			return total, fmt.Errorf("leasehold: purge: %w", err)
		}
		if n < purgeBatch {
			return total, nil
		}
	}
}

// purgeTimeout is the least time bound of a retention pass: several
// batches of purgeBatch jobs, each deleting their history too, so that a
// pass makes progress however large the table.
const purgeTimeout = 2 * time.Minute

// NewRetainer returns the retention service: every interval it purges
// the jobs of queues finished longer ago than retention. A client passes
// its own queues, those its stuck watcher looks at: it deletes no other
// service's finished jobs, which may hold unique keys that service
// counts on. Nil or empty queues delete nothing: a retainer never purges
// every queue (PurgeFinished does, with Purge). Each pass is bounded by
// interval, and by purgeTimeout at least: a pass on a connection that
// stopped answering ends by then. A pass cut off loses nothing: the
// batches it deleted stay deleted (each is a statement or transaction of
// its own), the batch it was deleting is rolled back, and the next pass
// starts again from the oldest finished jobs left of each queue.
func NewRetainer(d PurgeDriver, queues []string, retention, interval time.Duration, log *slog.Logger) *Periodic {
	if queues == nil {
		queues = []string{}
	}
	return &Periodic{Interval: interval, Timeout: max(interval, purgeTimeout), Pass: func(ctx context.Context) {
		_, err := PurgeQueues(ctx, d, queues, retention)
		logFailure(ctx, log, "leasehold: retention cleanup failed", err)
	}}
}
