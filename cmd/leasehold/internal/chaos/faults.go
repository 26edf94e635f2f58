package chaos

import (
	"context"
	"time"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/fleet"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/payments"
)

// killEvent is one SIGKILL.
type killEvent struct {
	Worker string        `json:"worker"`
	PID    int           `json:"pid"`
	At     time.Duration `json:"at_ns"`
	// DeathUS is the database clock read just before the kill (Unix µs),
	// 0 when the database did not answer (during a restart).
	DeathUS int64 `json:"death_db_us"`
	// deathWall is the orchestrator's clock halfway through that read.
	deathWall time.Time
	owner     string
	p         *fleet.Proc
	err       error
}

// freezeEvent is one SIGSTOP ... SIGCONT.
type freezeEvent struct {
	Worker string        `json:"worker"`
	PID    int           `json:"pid"`
	Job    int64         `json:"job"` // the charge it was frozen in
	At     time.Duration `json:"at_ns"`
	For    time.Duration `json:"for_ns"`
	// HeldWriteLock: on SQLite, no other process committed anything in
	// the first lockProbe of the freeze: the worker held the database's
	// single write lock, so every worker waited for it. Such a freeze is
	// ended at once (it would stall everyone rather than test the fence)
	// and another is armed.
	HeldWriteLock bool `json:"held_write_lock,omitempty"`
	// FromUS and ToUS are the database clock around the freeze (Unix µs).
	FromUS int64 `json:"from_db_us"`
	ToUS   int64 `json:"to_db_us"`
	// Held is, on PostgreSQL, what the worker's open transaction held
	// locked as it stopped (nil: nothing).
	Held        *heldRows `json:"held,omitempty"`
	p           *fleet.Proc
	since       time.Time
	dataVersion int64
	probing     bool // the SQLite lock probe is pending
}

// kill SIGKILLs a random worker; once it is dead (killed), its
// replacement starts. The database clock is read just before the kill, in
// the background, so that a slow database does not delay the schedule.
func (h *harness) kill(ctx context.Context) {
	p := h.fleet.Pick(h.rng)
	if p == nil {
		return
	}
	h.sched.killing++
	k := &killEvent{Worker: p.Name(), PID: p.Pid(), At: time.Since(h.start), owner: p.Owner(), p: p}
	h.fleet.KillLater(p, func() {
		before := time.Now()
		k.DeathUS = h.dbNow(ctx, time.Second)
		k.deathWall = before.Add(time.Since(before) / 2)
	}, func(err error) {
		k.err = err
		h.sched.killDone <- k
	})
}

// killed records a kill and starts the replacement.
func (h *harness) killed(k *killEvent) {
	h.sched.killing--
	if k.err != nil {
		h.logf("could not kill %s: %v", k.Worker, k.err)
		return
	}
	h.sched.kills = append(h.sched.kills, k)
	note := ""
	if k.DeathUS == 0 {
		note = " (database down: death time unknown)"
	}
	if np := h.replace(k.p); np != nil {
		h.logf("SIGKILL %s (pid %d)%s; restarted as %s (pid %d)", k.Worker, k.PID, note, np.Name(), np.Pid())
	}
}

// freeze SIGSTOPs the worker whose charge the provider just stalled.
func (h *harness) freeze(ctx context.Context, req payments.ChargeRequest) {
	if h.sched.frozen != nil || h.quiet() {
		return
	}
	p := h.fleet.Running(req.Owner)
	if p == nil {
		h.trap.Arm(1) // that worker is gone: freeze the next one
		return
	}
	f := &freezeEvent{Worker: p.Name(), PID: p.Pid(), Job: req.JobID, At: time.Since(h.start), p: p}
	sqlite := h.ns.target.Dialect == cli.SQLite
	if sqlite { // the clock around the freeze matters if it holds the lock
		f.FromUS = h.dbNow(ctx, time.Second)
	}
	if err := h.fleet.Freeze(p); err != nil {
		h.logf("chaos: %v", err)
		return
	}
	f.since = time.Now()
	if sqlite {
		// A commit of the worker's own may still land as it stops: take
		// the reference once it surely has stopped.
		time.Sleep(stopSettle)
		f.dataVersion = h.dataVersion(ctx)
	} else {
		time.Sleep(stopSettle) // a statement in flight ends on the server
		h.readHeld(ctx, f, p.Owner())
	}
	h.excludeFromOutages(p)
	h.sched.frozen = f
	h.sched.freezes = append(h.sched.freezes, f)
	first := h.o.FreezeFor
	if sqlite {
		first, f.probing = lockProbe, true
	}
	h.sched.thawTimer = time.NewTimer(first)
	h.logf("SIGSTOP %s (pid %d) in the middle of its charge for job %d, for %s (lease TTL %s)",
		p.Name(), p.Pid(), req.JobID, cli.FormatDuration(h.o.FreezeFor), cli.FormatDuration(h.o.TTL))
}

// lockProbe is how long after freezing an SQLite worker the harness checks
// whether anyone else can still commit.
const lockProbe = 300 * time.Millisecond

// stopSettle is how long a SIGSTOPped process is given to stop for good.
const stopSettle = 20 * time.Millisecond

// freezeTimer moves the freeze on: after the lock probe on SQLite, and at
// the end of the freeze.
func (h *harness) freezeTimer(ctx context.Context) {
	f := h.sched.frozen
	if !f.probing {
		h.thaw(ctx)
		return
	}
	f.probing = false
	if dv := h.dataVersion(ctx); dv == 0 || f.dataVersion == 0 || dv != f.dataVersion {
		h.sched.thawTimer = time.NewTimer(h.o.FreezeFor - lockProbe)
		return
	}
	f.HeldWriteLock = true
	h.thaw(ctx)
	if !h.quiet() {
		h.trap.Arm(1)
	}
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
	if err := h.fleet.Thaw(f.p); err != nil {
		h.logf("chaos: %v", err)
	}
	f.For = time.Since(f.since)
	if h.ns.target.Dialect == cli.SQLite {
		f.ToUS = h.dbNow(ctx, time.Second)
	}
	if f.HeldWriteLock {
		h.logf("SIGCONT %s after %s: frozen holding SQLite's write lock, it stopped every worker; another freeze is armed",
			f.Worker, cli.FormatDuration(f.For))
		return
	}
	h.logf("SIGCONT %s after %s: it wakes believing it still owns its jobs", f.Worker, cli.FormatDuration(f.For))
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
// pg_terminate_backend (in the background; terminated records it).
func (h *harness) terminate(ctx context.Context) {
	p := h.fleet.Pick(h.rng)
	if p == nil || h.sched.restarting {
		return
	}
	if _, reported := p.Stats(); !reported {
		return // not connected yet: try at the next tick
	}
	o := h.newOutage(outageTerminate, []*fleet.Proc{p})
	o.Worker = p.Name()
	h.sched.terminating = true
	go func() {
		db, err := h.db.SQL()
		if err == nil {
			qctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err = db.QueryRowContext(qctx, terminateSQL, p.Owner()).Scan(&o.Sessions)
			cancel()
		}
		o.end = time.Now()
		if err != nil {
			o.Error = err.Error()
		}
		h.sched.termDone <- o
	}()
}

// terminated records a termination.
func (h *harness) terminated(o *outage) {
	h.sched.terminating = false
	h.sched.outages = append(h.sched.outages, o)
	if o.Error != "" {
		h.logf("pg_terminate_backend for %s failed: %s", o.Worker, o.Error)
		return
	}
	h.logf("pg_terminate_backend: %d sessions of %s terminated", o.Sessions, o.Worker)
}

func (h *harness) sessionsTerminated() int64 {
	var n int64
	for _, o := range h.sched.outages {
		n += o.Sessions
	}
	return n
}
