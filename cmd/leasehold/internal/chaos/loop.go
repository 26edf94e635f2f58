package chaos

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/fleet"
)

// schedule is what the harness did to its workers and the database. The
// loop owns it; slow work (database calls, waiting for a process to die)
// runs in goroutines that report back on its channels, so that faults
// keep their cadence on a loaded machine.
type schedule struct {
	kills   []*killEvent
	freezes []*freezeEvent
	outages []*outage // restarts, terminations, network faults, failovers
	crashes []string  // workers that exited on their own

	frozen      *freezeEvent // the worker frozen now, if any
	thawTimer   *time.Timer  // the frozen worker's next step: lock probe or thaw
	restarting  bool
	restartDone chan restartResult
	restarts    int // restarts started
	killDone    chan *killEvent
	killing     int // kills in flight
	termDone    chan *outage
	terminating bool

	failoverDone chan failoverResult
	failingOver  bool
	failovers    int // failovers started (0 or 1)

	draining     bool // the last jobs: no more faults
	lastProgress time.Time
}

// jobCounts are the job counts read by the counting goroutine.
type jobCounts struct {
	mu                        sync.Mutex
	ok                        bool
	completed, finished, open int64
}

func (c *jobCounts) get() (ok bool, completed, finished, open int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.ok, c.completed, c.finished, c.open
}

// set records the counts of qs: completed and finished payments (both
// payment queues), and the open jobs of every queue of the harness,
// reconciling payments and unfinished reconcile jobs included.
func (c *jobCounts) set(qs []*leasehold.QueueStats) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.ok, c.completed, c.finished, c.open = true, 0, 0, 0
	for _, q := range qs {
		n := q.Counts
		switch q.Queue {
		case Queue, ReconcileQueue:
			c.completed += n[leasehold.StateCompleted]
			c.finished += n[leasehold.StateCompleted] + n[leasehold.StateFailed] + n[leasehold.StateCancelled]
		case ReconcilerQueue:
		default:
			continue
		}
		c.open += n[leasehold.StatePending] + n[leasehold.StateProcessing] + n[leasehold.StateStuck] +
			n[leasehold.StateReconciling]
	}
}

// count reads the job counts every 250ms until ctx ends.
func (h *harness) count(ctx context.Context, c *jobCounts) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		qs, err := h.client.QueueStats(qctx)
		cancel()
		if err == nil {
			c.set(qs)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// thawC is the channel of the pending freeze step, nil when nobody is
// frozen.
func (s *schedule) thawC() <-chan time.Time {
	if s.thawTimer == nil {
		return nil
	}
	return s.thawTimer.C
}

// every returns a ticker channel for a positive period, else nil (never).
func every(d time.Duration) (<-chan time.Time, func()) {
	if d <= 0 {
		return nil, func() {}
	}
	t := time.NewTicker(d)
	return t.C, t.Stop
}

// loop injects faults on the schedule until every job is finished and
// every outage's recovery is settled, or until ctx ends.
func (h *harness) loop(ctx context.Context) error {
	s := &h.sched
	s.restartDone = make(chan restartResult, 1)
	s.killDone = make(chan *killEvent, 64)
	s.termDone = make(chan *outage, 1)
	s.failoverDone = make(chan failoverResult, 1)
	var counts jobCounts
	cctx, stopCount := context.WithCancel(ctx)
	defer stopCount()
	go h.count(cctx, &counts)
	killC, stopKill := every(h.o.KillEvery)
	defer stopKill()
	freezeC, stopFreeze := every(h.o.FreezeEvery)
	defer stopFreeze()
	termC, stopTerm := every(h.o.PGTerminateEvery)
	defer stopTerm()
	netC, stopNet := every(h.o.NetFaultEvery)
	defer stopNet()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	s.lastProgress = time.Now()
	for {
		select {
		case <-ctx.Done():
			if ctx.Err() != context.DeadlineExceeded {
				return ctx.Err()
			}
			h.logf("timeout: the jobs did not drain within %s", cli.FormatDuration(h.o.Timeout))
			return fmt.Errorf("the run did not drain within --timeout %s", cli.FormatDuration(h.o.Timeout))
		case <-killC:
			if !h.quiet() {
				h.kill(ctx)
			}
		case k := <-s.killDone:
			h.killed(k)
		case <-freezeC:
			if s.frozen == nil && !h.quiet() {
				h.trap.Arm(1)
			}
		case req := <-h.trap.Caught():
			h.freeze(ctx, req)
		case <-s.thawC():
			h.freezeTimer(ctx)
		case <-termC:
			if !h.quiet() && !s.terminating {
				h.terminate(ctx)
			}
		case o := <-s.termDone:
			h.terminated(o)
		case <-netC:
			h.startNetFault(ctx)
		case <-h.netTimerC():
			h.endNetFault(ctx)
		case r := <-s.restartDone:
			h.restarted(r)
		case r := <-s.failoverDone:
			h.failedOver(r)
		case p := <-h.fleet.Exits():
			h.exited(p)
		case <-tick.C:
			if h.tick(ctx, &counts) {
				return nil
			}
		}
	}
}

// tick follows the jobs, starts the restart that is due, settles outages
// and reports whether the run is over.
func (h *harness) tick(ctx context.Context, c *jobCounts) bool {
	s := &h.sched
	ok, completed, finished, open := c.get()
	if time.Since(s.lastProgress) >= 2*time.Second {
		s.lastProgress = time.Now()
		h.logf("progress: %d/%d completed, %d open; %d kills, %d freezes, %d restarts, %d sessions terminated",
			completed, h.o.Jobs, open, len(s.kills), len(s.freezes), s.restarts, h.sessionsTerminated())
	}
	if ok && !s.draining && completed > 0 &&
		(open <= int64(h.o.Concurrency) || 100*completed >= 99*int64(h.o.Jobs)) {
		// The last few jobs: chasing them with kills and freezes would
		// only stretch the tail of the run.
		s.draining = true
		h.trap.Disarm()
		h.logf("draining: %d jobs left open; no more kills, freezes or terminations", open)
	}
	drained := ok && open == 0 && finished >= int64(h.o.Jobs)
	if !s.restarting && s.frozen == nil && s.restarts < h.o.PGRestarts &&
		(drained || completed*int64(h.o.PGRestarts+1) >= int64(h.o.Jobs)*int64(s.restarts+1)) {
		h.trap.Disarm()
		h.startRestart(ctx)
	}
	if h.pair != nil && s.failovers == 0 && !s.restarting && s.frozen == nil && s.killing == 0 &&
		(drained || float64(completed) >= h.o.FailoverAt*float64(h.o.Jobs)) {
		h.trap.Disarm()
		h.startFailover(ctx, completed)
	}
	settled := h.settleOutages()
	failedOver := h.pair == nil || (s.failovers == 1 && !s.failingOver)
	return drained && settled && !s.restarting && s.restarts >= h.o.PGRestarts && failedOver
}

// quiet reports whether kills, freezes and terminations pause: while the
// last jobs drain, and from a database restart until every worker came
// back from it, so that each worker lives through the restart and must
// recover on its own.
func (h *harness) quiet() bool {
	if h.sched.draining {
		return true
	}
	for _, o := range h.sched.outages {
		if (o.Kind == outageRestart || o.Kind == outageFailover) && !o.settled {
			return true
		}
	}
	return false
}

// finishFaults ends the faults still in effect once the jobs drained.
func (h *harness) finishFaults(ctx context.Context) {
	s := &h.sched
	h.trap.Disarm()
	if s.frozen != nil {
		h.thaw(ctx)
	}
	if s.restarting {
		h.restarted(<-s.restartDone)
	}
	if s.failingOver {
		h.failedOver(<-s.failoverDone)
	}
	for s.killing > 0 {
		h.killed(<-s.killDone)
	}
	if s.terminating {
		h.terminated(<-s.termDone)
	}
	if h.net != nil && h.net.active != nil {
		h.endNetFault(ctx)
	}
}

// exited handles a worker that exited: one the harness did not kill or
// stop crashed, which is recorded; it is restarted so the run goes on.
func (h *harness) exited(p *fleet.Proc) {
	if p.ExitExpected() {
		return
	}
	msg := fmt.Sprintf("worker %s (pid %d) exited on its own (%v): %s", p.Name(), p.Pid(), p.Err(), p.LogTail(3))
	h.sched.crashes = append(h.sched.crashes, msg)
	h.logf("%s", msg)
	h.replace(p)
}

// replace starts the next process of p's slot, unless p is no longer the
// slot's current process.
func (h *harness) replace(p *fleet.Proc) *fleet.Proc {
	s := h.slotOf(p)
	if s == nil {
		return nil
	}
	if err := h.spawn(s); err != nil {
		h.logf("could not restart %s: %v", p.Name(), err)
		return nil
	}
	return s.p
}

// dbNow reads the database clock (Unix µs), or returns 0 when the database
// does not answer within d.
func (h *harness) dbNow(ctx context.Context, d time.Duration) int64 {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d)
	defer cancel()
	now, err := h.db.Driver.Now(ctx)
	if err != nil {
		return 0
	}
	return now.UnixMicro()
}
