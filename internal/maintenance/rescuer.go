package maintenance

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/statemachine"
	"github.com/leasehold/leasehold/leasetype"
)

// rescueBatch caps the jobs one rescue statement moves.
const rescueBatch = 1000

// RescueDriver is the part of the driver the stuck watcher calls.
type RescueDriver interface {
	RescueExpired(ctx context.Context, p *driver.RescueParams) ([]*leasetype.RescuedJob, error)
}

// RescuerConfig is what a Rescuer needs.
type RescuerConfig struct {
	Driver RescueDriver
	// FlagQueues are the queues whose expired leases become stuck rather
	// than pending.
	FlagQueues []string
	// Reconcile maps the queues whose expired leases become reconciling
	// to where their reconcile jobs go.
	Reconcile map[string]statemachine.ReconcileTarget
	// Queues are the queues the watcher's own passes (every Interval)
	// look at: those whose policy the client knows. Pass looks at every
	// queue.
	Queues []string
	// Owner and Held, when set, name the client and the leases it still
	// answers for: every pass, Pass too, leaves them alone
	// (driver.RescueParams.Held).
	Owner    string
	Held     func() []int64
	Interval time.Duration
	Emit     func(leasetype.Event)
	Logger   *slog.Logger
}

// Rescuer is the stuck watcher: every Interval, every processing job of
// its Queues whose lease has expired (database clock) goes back to pending, or to
// stuck in flagged queues, or to reconciling (with a reconcile job) in
// queues that reconcile, or to failed when its retry budget is spent, or
// to cancelled when an operator asked for it (outside the queues that
// reconcile, where the reconciler decides first).
type Rescuer struct {
	Periodic
	cfg RescuerConfig
	// decide is the state machine's transition of an expired lease.
	decide func(*leasetype.JobRow) driver.Transition
}

// NewRescuer returns a stuck watcher. Each of its passes is bounded by
// its Interval, and by passTimeout at least, as a claim is: a pass on a
// connection that stopped answering ends by then, and the next runs at
// the next tick; a pass cut off keeps the batches it moved
// (each is a transaction of its own), and the next moves the rest. A
// pass slower than Interval delays the next one anyway, so a bound
// shorter than Interval would bring it no sooner.
func NewRescuer(cfg RescuerConfig) *Rescuer {
	r := &Rescuer{cfg: cfg, decide: statemachine.PolicyRescuer(statemachine.Policy{
		Flag: cfg.FlagQueues, Reconcile: cfg.Reconcile,
	})}
	r.Periodic = Periodic{Interval: cfg.Interval, Timeout: max(cfg.Interval, passTimeout), Pass: func(ctx context.Context) {
		_, err := r.pass(ctx, cfg.Queues)
		logFailure(ctx, cfg.Logger, "leasehold: stuck watcher pass failed", err)
	}}
	return r
}

// Pass moves every expired lease now, of every queue, in batches, and
// returns the jobs moved. It is a conditional update, so concurrent passes
// are harmless. It is bounded by ctx alone, the caller's.
func (r *Rescuer) Pass(ctx context.Context) ([]*leasetype.RescuedJob, error) {
	return r.pass(ctx, nil)
}

// pass is Pass for the expired leases of queues (nil: every queue).
func (r *Rescuer) pass(ctx context.Context, queues []string) ([]*leasetype.RescuedJob, error) {
	var all []*leasetype.RescuedJob
	for {
		p := &driver.RescueParams{Decide: r.decide, Limit: rescueBatch, Queues: queues, Owner: r.cfg.Owner}
		if r.cfg.Held != nil {
			p.Held = r.cfg.Held()
		}
		moved, err := r.cfg.Driver.RescueExpired(ctx, p)
		if err != nil {
			return all, fmt.Errorf("leasehold: rescue expired leases: %w", err)
		}
		all = append(all, moved...)
		for _, j := range moved {
			r.cfg.Emit(leasetype.Event{Kind: leasetype.EventRescued, Rescued: j})
			r.cfg.Logger.Info("leasehold: expired lease rescued", "job", j.ID, "kind", j.Kind,
				"queue", j.Queue, "attempt", j.Attempt, "owner", j.Owner, "state", j.NewState, "reconcile_job", j.ReconcileJobID)
		}
		if len(moved) < rescueBatch {
			return all, nil
		}
	}
}
