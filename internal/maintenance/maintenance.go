// Package maintenance holds a leasehold client's periodic services, apart
// from the lease engine: the stuck watcher (Rescuer), which returns jobs
// whose lease expired; retention (NewRetainer), which deletes finished
// jobs past their retention; the throughput Recorder, which adds the
// client's finished jobs to the per-minute totals; and the periodic
// Enqueuer, which inserts the slots of periodic jobs. Each runs
// leaderless: several clients may run them at once, because every pass is
// a conditional write that concurrent passes cannot double (the
// Recorder's adds its own counts, the Enqueuer's slots are unique).
//
// Every pass, and every statement of the Enqueuer, runs under a time
// bound (Periodic.Timeout, EnqueuerConfig.Timeout): a database server that
// vanished without resetting its connections (a failover whose old
// primary was powered off or cut off) leaves a pooled connection on which
// a statement waits as long as TCP retransmits, a quarter of an hour,
// since the statement has no bound of its own, nor pgxpool's health check
// by default (the pools pgdriver.Open makes bound it to 5 s). Bounded, such a connection costs one pass (the driver drops a
// connection whose statement was cut off), and the next pass goes on.
// Each pass's writes are conditional and batched, and a cut-off flush of
// the Recorder keeps its counts, so a pass cut off loses nothing but its
// time.
package maintenance

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/leasehold/leasehold/internal/service"
)

// passTimeout is the least time bound of a pass or statement of these
// services: the bound the lease engine gives a claim, a probe and a
// finish (engine.ClaimTimeout), since their statements are alike.
const passTimeout = 30 * time.Second

// Periodic runs Pass once at Start and then every Interval until Stop. It
// is a service.Service.
type Periodic struct {
	Interval time.Duration
	// Timeout, when positive, bounds each pass: its context ends Timeout
	// after the pass began, so that a pass stuck on a connection that no
	// longer answers ends, and the next runs at the next tick. A Pass
	// that logs its failure with logFailure on its context has a pass cut
	// off by Timeout logged as timed out. Zero or negative: a pass ends
	// only at Stop. Stop cancels a pass in progress at once either way.
	Timeout time.Duration
	Pass    func(ctx context.Context)
	life    service.Lifecycle
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
		p.pass(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// pass runs Pass once, bounded by Timeout, on a context of the loop's,
// which Stop cancels.
func (p *Periodic) pass(ctx context.Context) {
	ctx, cancel := bound(ctx, p.Timeout)
	defer cancel()
	p.Pass(ctx)
}

// timeoutError is the cause (context.Cause) of the context of a pass or
// statement that its service's time bound ended, and is wrapped by the
// error that pass or statement returned (see timedOut).
type timeoutError struct {
	after time.Duration // the bound
}

func (e *timeoutError) Error() string {
	return fmt.Sprintf("timed out after %v", e.after)
}

// bound returns ctx bounded by d (not bounded when d is not positive),
// with a *timeoutError as the cause of its end when the bound ends it.
func bound(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	if d <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeoutCause(ctx, d, &timeoutError{after: d})
}

// timedOut returns err, wrapping a *timeoutError when ctx is one that
// bound returned and its bound ended it (not the caller's context, which
// leaves a different cause): the error is then the bound's, and worth a
// warning even though ctx is done.
func timedOut(ctx context.Context, err error) error {
	var te *timeoutError
	if err != nil && errors.As(context.Cause(ctx), &te) && !errors.As(err, new(*timeoutError)) {
		return fmt.Errorf("%w: %w", te, err)
	}
	return err
}

// logFailure logs a failed pass, unless the service is stopping. ctx is
// the pass's: a pass cut off by its bound (Periodic.Timeout) is logged as
// timed out, and so is an err that wraps a *timeoutError (an Enqueuer's
// statement cut off by its own).
func logFailure(ctx context.Context, log *slog.Logger, msg string, err error) {
	err = timedOut(ctx, err)
	var te *timeoutError
	switch {
	case err == nil:
	case errors.As(err, &te):
		log.Warn(msg+" (timed out)", "err", err, "timeout", te.after)
	case ctx.Err() == nil:
		log.Warn(msg, "err", err)
	}
}
