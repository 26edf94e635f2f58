package chaos

import (
	"context"
	"time"

	"github.com/leasehold/leasehold/internal/cli"
	"github.com/leasehold/leasehold/internal/payments"
)

// killEvent is one SIGKILL.
type killEvent struct {
	Worker string        `json:"worker"`
	PID    int           `json:"pid"`
	At     time.Duration `json:"at_ns"`
	owner  string
	// deathUS is the database clock read just before the kill (Unix µs),
	// 0 when the database did not answer (during a restart).
	deathUS int64
}

// freezeEvent is one SIGSTOP ... SIGCONT.
type freezeEvent struct {
	Worker string        `json:"worker"`
	PID    int           `json:"pid"`
	Job    int64         `json:"job"` // the charge it was frozen in
	At     time.Duration `json:"at_ns"`
	For    time.Duration `json:"for_ns"`
	// HeldWriteLock: on SQLite, no other process committed anything while
	// the worker was frozen: it held the single write lock, and every
	// worker waited for it.
	HeldWriteLock bool `json:"held_write_lock,omitempty"`
	p             *proc
	since         time.Time
	fromUS, toUS  int64
	dataVersion   int64
}

// kill SIGKILLs a random worker and starts its replacement at once.
func (h *harness) kill(ctx context.Context) {
	p := h.pick()
	if p == nil {
		return
	}
	death := h.dbNow(ctx, 500*time.Millisecond)
	if err := p.cmd.Process.Kill(); err != nil {
		h.logf("could not kill %s: %v", p.name(), err)
		return
	}
	p.killed = true
	h.arm.setEligible(p.owner, false)
	p.waitExit(5 * time.Second)
	h.sched.kills = append(h.sched.kills, &killEvent{
		Worker: p.name(), PID: p.pid(), At: time.Since(h.start), owner: p.owner, deathUS: death,
	})
	note := ""
	if death == 0 {
		note = " (database down: death time unknown)"
	}
	if np := h.replace(p); np != nil {
		h.logf("SIGKILL %s (pid %d)%s; restarted as %s (pid %d)", p.name(), p.pid(), note, np.name(), np.pid())
	}
}

// freeze SIGSTOPs the worker whose charge the provider just stalled.
func (h *harness) freeze(ctx context.Context, req payments.ChargeRequest) {
	p := h.procByOwner(req.Owner)
	if h.sched.frozen != nil || p == nil || !p.alive() || p.frozen {
		h.arm.setArmed(h.sched.frozen == nil)
		return
	}
	f := &freezeEvent{Worker: p.name(), PID: p.pid(), Job: req.JobID, At: time.Since(h.start), p: p}
	f.fromUS, f.dataVersion = h.dbNow(ctx, time.Second), h.dataVersion(ctx)
	if err := p.signal(sigstop); err != nil {
		h.logf("%v", err)
		return
	}
	f.since = time.Now()
	p.frozen = true
	h.arm.setEligible(p.owner, false)
	h.excludeFromOutages(p)
	h.sched.frozen = f
	h.sched.freezes = append(h.sched.freezes, f)
	h.sched.thawTimer = time.NewTimer(h.o.FreezeFor)
	h.logf("SIGSTOP %s (pid %d) in the middle of its charge for job %d, for %s (lease TTL %s)",
		p.name(), p.pid(), req.JobID, cli.FormatDuration(h.o.FreezeFor), cli.FormatDuration(h.o.TTL))
}

// thaw SIGCONTs the frozen worker: it wakes believing it still owns its
// jobs, and tries to complete them.
func (h *harness) thaw(ctx context.Context) {
	f := h.sched.frozen
	h.sched.frozen = nil
	if h.sched.thawTimer != nil {
		h.sched.thawTimer.Stop()
		h.sched.thawTimer = nil
	}
	dv := h.dataVersion(ctx)
	if err := f.p.signal(sigcont); err != nil {
		h.logf("%v", err)
	}
	f.For = time.Since(f.since)
	f.p.frozen = false
	f.toUS = h.dbNow(ctx, time.Second)
	f.HeldWriteLock = h.ns.target.Dialect == cli.SQLite && dv != 0 && dv == f.dataVersion
	if f.p.alive() {
		h.arm.setEligible(f.p.owner, true)
	}
	note := ""
	if f.HeldWriteLock {
		note = "; it held SQLite's write lock, so no worker could write meanwhile"
	}
	h.logf("SIGCONT %s after %s: it wakes believing it still owns its jobs%s", f.Worker, cli.FormatDuration(f.For), note)
}

// dataVersion reads SQLite's data_version, which changes whenever another
// connection commits (0 on PostgreSQL or on error).
func (h *harness) dataVersion(ctx context.Context) int64 {
	if h.ns.target.Dialect != cli.SQLite {
		return 0
	}
	db, err := h.db.SQL()
	if err != nil {
		return 0
	}
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	var v int64
	if err := db.QueryRowContext(ctx, "PRAGMA data_version").Scan(&v); err != nil {
		return 0
	}
	return v
}

// terminateSQL terminates the sessions named $1 and counts them. The
// subquery is fenced off (OFFSET 0) so that no other session is ever
// passed to pg_terminate_backend, whatever the plan.
const terminateSQL = `SELECT count(*) FILTER (WHERE pg_terminate_backend(pid)) FROM (
	SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid() OFFSET 0) s`

// terminate ends every database session of a random worker with
// pg_terminate_backend.
func (h *harness) terminate(ctx context.Context) {
	p := h.pick()
	if p == nil || h.sched.restarting {
		return
	}
	if _, _, reported := p.latest(); !reported {
		return // not connected yet: try at the next tick
	}
	o := h.newOutage(outageTerminate, []*proc{p})
	o.Worker = p.name()
	db, err := h.db.SQL()
	if err == nil {
		qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		err = db.QueryRowContext(qctx, terminateSQL, p.owner).Scan(&o.Sessions)
		cancel()
	}
	o.end = time.Now()
	if err != nil {
		o.Error = err.Error()
		h.logf("pg_terminate_backend for %s failed: %v", p.name(), err)
	} else {
		h.logf("pg_terminate_backend: %d sessions of %s (pid %d) terminated", o.Sessions, p.name(), p.pid())
	}
	h.sched.outages = append(h.sched.outages, o)
}

func (h *harness) sessionsTerminated() int64 {
	var n int64
	for _, o := range h.sched.outages {
		n += o.Sessions
	}
	return n
}
