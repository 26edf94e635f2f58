package demo

import (
	"context"
	"fmt"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/fleet"
)

// step is one step of the demo's script. do acts once, when the step
// starts; until is checked then and after every event of the run (a
// progress tick, a stalled charge, a worker's exit), and ends the step
// once it holds. Either may be nil. Meanwhile the run is narrated: the
// progress line, the stalls, the leases that move on.
type step struct {
	name  string
	do    func(ctx context.Context) error
	until func() bool
}

// script is the story, one fault step after another: the kill and the
// freeze are the fleet's, as in the chaos harness, on workers the trap
// caught in the middle of a charge.
func (d *demo) script() []step {
	s := []step{
		{name: "start the workers", do: d.startWorkers},
		{name: "wait for a charge to stall", until: d.stallCaught},
		{name: "kill the worker making it", do: d.killCaught},
	}
	if fleet.CanFreeze {
		s = append(s,
			step{name: "wait for another charge to stall", until: d.stallCaught},
			step{name: "freeze the worker making it", do: d.freezeCaught},
			step{name: "watch the takeover", until: d.leasesMoved},
			step{name: "thaw it", do: d.thaw},
			step{name: "show its late writes refused", until: d.lateWritesShown},
		)
	}
	return append(s, step{name: "let every payment finish", until: func() bool { return d.story.finished }})
}

// play runs the steps in order.
func (d *demo) play(ctx context.Context, steps []step) error {
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for _, s := range steps {
		if s.do != nil {
			if err := s.do(ctx); err != nil {
				d.scr.EndStatus()
				return fmt.Errorf("demo: %s: %w", s.name, err)
			}
		}
		for s.until != nil && !s.until() {
			if err := d.next(ctx, tick.C); err != nil {
				return err
			}
		}
	}
	return nil
}

// next waits for the next event of the run and handles it.
func (d *demo) next(ctx context.Context, tick <-chan time.Time) error {
	select {
	case <-ctx.Done():
		return d.interrupted(ctx)
	case req := <-d.trap.Caught():
		d.story.caught = append(d.story.caught, req)
	case req := <-d.stalls:
		d.tellStall(req)
	case p := <-d.fleet.Exits():
		if ctx.Err() != nil {
			return d.interrupted(ctx) // Ctrl-C reaches the workers too
		}
		if !p.ExitExpected() {
			d.scr.EndStatus()
			return fmt.Errorf("worker %s exited unexpectedly (%v): %s", p.Name(), p.Err(), p.LogTail(3))
		}
	case <-tick:
		if d.rec != nil {
			return d.reconcileTick(ctx)
		}
		return d.tick(ctx)
	}
	return nil
}

// tick redraws the progress line, tells the leases that moved on, and
// notes whether every payment is finished.
func (d *demo) tick(ctx context.Context) error {
	s, err := d.paymentCounts(ctx)
	if err != nil {
		d.scr.EndStatus()
		return err
	}
	ps := d.provider.Stats()
	finished := s.states[leasehold.StateCompleted] + s.states[leasehold.StateFailed] + s.states[leasehold.StateCancelled]
	d.scr.Status("pending %d, processing %d (%d expired), completed %d/%d, charges %d",
		s.states[leasehold.StatePending], s.states[leasehold.StateProcessing], s.expired,
		s.states[leasehold.StateCompleted], d.o.Payments, ps.Charges)
	d.followLeases(ctx)
	d.story.finished = finished >= int64(d.o.Payments)
	return nil
}
