// Package maintenance holds a leasehold client's periodic services, apart
// from the lease engine: the stuck watcher (Rescuer), which returns jobs
// whose lease expired; retention (NewRetainer), which deletes finished
// jobs past their retention; the throughput Recorder, which adds the
// client's finished jobs to the per-minute totals; and the periodic
// Enqueuer, which inserts the slots of periodic jobs. Each runs
// leaderless: several clients may run them at once, because every pass is
// a conditional write that concurrent passes cannot double (the
// Recorder's adds its own counts, the Enqueuer's slots are unique).
package maintenance

import (
	"context"
	"log/slog"
	"time"

	"github.com/leasehold/leasehold/internal/service"
)

// Periodic runs Pass once at Start and then every Interval until Stop. It
// is a service.Service.
type Periodic struct {
	Interval time.Duration
	Pass     func(ctx context.Context)
	life     service.Lifecycle
}

// Start launches the loop.
func (p *Periodic) Start(context.Context) error {
	ctx, err := p.life.Begin()
	if err != nil {
		return err
	}
	p.life.Go(func() { p.loop(ctx) })
	return nil
}

// Stop cancels the pass in progress, if any, and ends the loop.
func (p *Periodic) Stop(ctx context.Context) error { return p.life.Stop(ctx, nil) }

func (p *Periodic) loop(ctx context.Context) {
	t := time.NewTicker(p.Interval)
	defer t.Stop()
	for {
		p.Pass(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// logFailure logs a failed pass, unless the service is stopping.
func logFailure(ctx context.Context, log *slog.Logger, msg string, err error) {
	if err != nil && ctx.Err() == nil {
		log.Warn(msg, "err", err)
	}
}
