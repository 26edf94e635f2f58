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

// Purge deletes the finished jobs (and their history) that finished more
// than olderThan ago, in batches, and returns how many it deleted.
func Purge(ctx context.Context, d PurgeDriver, olderThan time.Duration) (int64, error) {
	var total int64
	for {
		n, err := d.Purge(ctx, &driver.PurgeParams{OlderThan: olderThan, Limit: purgeBatch})
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
// the jobs finished longer ago than retention. Each pass is bounded by
// interval, and by purgeTimeout at least: a pass on a connection that
// stopped answering ends by then. A pass cut off loses nothing: the
// batches it deleted stay deleted (each is a statement or transaction of
// its own), the batch it was deleting is rolled back, and the next pass
// starts again from the oldest finished jobs left.
func NewRetainer(d PurgeDriver, retention, interval time.Duration, log *slog.Logger) *Periodic {
	return &Periodic{Interval: interval, Timeout: max(interval, purgeTimeout), Pass: func(ctx context.Context) {
		_, err := Purge(ctx, d, retention)
		logFailure(ctx, log, "leasehold: retention cleanup failed", err)
	}}
}
