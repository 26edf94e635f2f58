package chaos

import (
	"context"
	"fmt"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/cli"
)

// schedule is what the harness did to its workers and the database.
type schedule struct {
	kills   []*killEvent
	freezes []*freezeEvent
	outages []*outage // database restarts and terminated sessions
	crashes []string  // workers that exited on their own

	frozen      *freezeEvent // the worker frozen now, if any
	thawTimer   *time.Timer
	restarting  bool
	restartDone chan restartResult
	restarts    int // restarts started

	completed, finished, open int64 // job counts at the latest tick
	lastProgress              time.Time
}

// thawC is the channel of the pending thaw, nil when nobody is frozen.
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
	h.sched.restartDone = make(chan restartResult, 1)
	killC, stopKill := every(h.o.KillEvery)
	defer stopKill()
	freezeC, stopFreeze := every(h.o.FreezeEvery)
	defer stopFreeze()
	termC, stopTerm := every(h.o.PGTerminateEvery)
	defer stopTerm()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	h.sched.lastProgress = time.Now()
	for {
		select {
		case <-ctx.Done():
			h.logf("timeout: the jobs did not drain within %s", cli.FormatDuration(h.o.Timeout))
			return fmt.Errorf("the run did not drain within --timeout %s", cli.FormatDuration(h.o.Timeout))
		case <-killC:
			h.kill(ctx)
		case <-freezeC:
			if h.sched.frozen == nil {
				h.arm.setArmed(true)
			}
		case req := <-h.arm.picked:
			h.freeze(ctx, req)
		case <-h.sched.thawC():
			h.thaw(ctx)
		case <-termC:
			h.terminate(ctx)
		case r := <-h.sched.restartDone:
			h.restarted(ctx, r)
		case p := <-h.exits:
			h.exited(p)
		case <-tick.C:
			if h.tick(ctx) {
				return nil
			}
		}
	}
}

// tick follows the jobs, starts the restart that is due, settles outages
// and reports whether the run is over.
func (h *harness) tick(ctx context.Context) bool {
	qctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	qs, err := h.client.QueueStats(qctx)
	cancel()
	s := &h.sched
	if err == nil {
		var c map[leasehold.JobState]int64
		for _, q := range qs {
			if q.Queue == Queue {
				c = q.Counts
			}
		}
		s.completed = c[leasehold.StateCompleted]
		s.finished = s.completed + c[leasehold.StateFailed] + c[leasehold.StateCancelled]
		s.open = c[leasehold.StatePending] + c[leasehold.StateProcessing] + c[leasehold.StateStuck]
	}
	if time.Since(s.lastProgress) >= 2*time.Second {
		s.lastProgress = time.Now()
		h.logf("progress: %d/%d completed, %d open; %d kills, %d freezes, %d restarts, %d sessions terminated",
			s.completed, h.o.Jobs, s.open, len(s.kills), len(s.freezes), s.restarts, h.sessionsTerminated())
	}
	drained := err == nil && s.open == 0 && s.finished >= int64(h.o.Jobs)
	if !s.restarting && s.restarts < h.o.PGRestarts &&
		(drained || s.completed*int64(h.o.PGRestarts+1) >= int64(h.o.Jobs)*int64(s.restarts+1)) {
		h.startRestart(ctx)
	}
	settled := h.settleOutages()
	return drained && settled && !s.restarting && s.restarts >= h.o.PGRestarts
}

// finishFaults ends the faults still in effect once the jobs drained.
func (h *harness) finishFaults(ctx context.Context) {
	h.arm.setArmed(false)
	if h.sched.frozen != nil {
		h.thaw(ctx)
	}
	if h.sched.restarting {
		h.restarted(ctx, <-h.sched.restartDone)
	}
}

// exited handles a worker that exited: one the harness did not kill or
// stop crashed, which is recorded; it is restarted so the run goes on.
func (h *harness) exited(p *proc) {
	if p.killed || p.stopping {
		return
	}
	h.arm.setEligible(p.owner, false)
	msg := fmt.Sprintf("worker %s (pid %d) exited on its own (%v): %s", p.name(), p.pid(), p.err, p.stderr.Tail(3))
	h.sched.crashes = append(h.sched.crashes, msg)
	h.logf("%s", msg)
	if h.procs[p.slot-1] != p {
		return
	}
	h.replace(p)
}

// replace starts the next process of p's slot.
func (h *harness) replace(p *proc) *proc {
	np, err := h.spawn(p.slot, p.gen+1)
	if err != nil {
		h.logf("could not restart %s: %v", p.name(), err)
		return nil
	}
	h.procs[p.slot-1] = np
	h.arm.setEligible(np.owner, true)
	return np
}

// pick returns a random worker that runs and is not frozen, or nil.
func (h *harness) pick() *proc {
	var cands []*proc
	for _, p := range h.procs {
		if p.alive() && !p.frozen {
			cands = append(cands, p)
		}
	}
	if len(cands) == 0 {
		return nil
	}
	return cands[h.rng.IntN(len(cands))]
}

func (h *harness) procByOwner(owner string) *proc {
	for _, p := range h.procs {
		if p.owner == owner {
			return p
		}
	}
	return nil
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
