package chaos

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/fleet"
	"github.com/leasehold/leasehold/internal/pgctl"
)

// Kinds of outage.
const (
	outageRestart   = "pg_restart"   // pg_ctl restart -m immediate
	outageTerminate = "pg_terminate" // pg_terminate_backend of one worker's sessions
)

// outage is a database restart, a termination of a worker's sessions, a
// network fault between some workers and the database, or a failover, and
// how the workers that lived through it came back.
type outage struct {
	Kind     string        `json:"kind"`
	At       time.Duration `json:"at_ns"`
	Took     time.Duration `json:"took_ns"` // the restart itself
	Worker   string        `json:"worker,omitempty"`
	Sessions int64         `json:"sessions,omitempty"`
	// Workers is how many workers ran through it (neither killed nor
	// frozen until they reached the database again); Recovered how many
	// of them reached it again, on their own, within the recovery timeout.
	Workers   int `json:"workers"`
	Recovered int `json:"recovered"`
	// RecoveredIn is the longest time from the end of the outage to a
	// worker's first successful database call.
	RecoveredIn time.Duration `json:"recovered_in_ns"`
	// Errors counts the failed database calls of those workers from the
	// start of the outage until they had all recovered.
	Errors int64  `json:"errors"`
	Error  string `json:"error,omitempty"`
	// Network faults: Delay is the reply delay of net_delay, Severed the
	// connections a net_partition closed, Refusals the refused completions
	// of the cut-off workers during it or soon after (netRefusalWindow).
	Delay    time.Duration `json:"delay_ns,omitempty"`
	Severed  int64         `json:"severed,omitempty"`
	Refusals int           `json:"refusals,omitempty"`

	// FromUS and ToUS span a restart or a failover (Unix µs): for a
	// restart, the database clock, read after it and counted back to its
	// start; for a failover, whose primary is dead, the orchestrator's
	// clock, which is the database's own (the harness runs the servers on
	// its host).
	FromUS int64 `json:"from_db_us,omitempty"`
	ToUS   int64 `json:"to_db_us,omitempty"`

	start, end time.Time // end is zero while a restart runs
	watch      []*recoveryWatch
	settled    bool
}

// recoveryWatch follows one worker through an outage.
type recoveryWatch struct {
	p            *fleet.Proc
	errorsBefore int64
	excluded     bool // killed or frozen meanwhile
	recovered    bool
	in           time.Duration
}

func (h *harness) newOutage(kind string, procs []*fleet.Proc) *outage {
	o := &outage{Kind: kind, At: time.Since(h.start), start: time.Now()}
	for _, p := range procs {
		o.watch = append(o.watch, &recoveryWatch{p: p, errorsBefore: h.calls(p).Errors()})
	}
	return o
}

// restartResult is the end of a restart run in the background.
type restartResult struct {
	o    *outage
	end  time.Time // pg_ctl returned
	err  error
	toUS int64     // the database clock once it answered again (0: never)
	read time.Time // when toUS was read
}

// startRestart restarts PostgreSQL in the background: the loop goes on
// (freezes must end on time) while the server is down.
func (h *harness) startRestart(ctx context.Context) {
	procs := h.current()
	o := h.newOutage(outageRestart, procs)
	h.sched.restarting = true
	h.sched.restarts++
	h.sched.outages = append(h.sched.outages, o)
	h.logf("pg_ctl restart -m immediate (%d of %d): every session dies, the server runs crash recovery; %d workers running",
		h.sched.restarts, h.o.PGRestarts, len(procs))
	opts := pgctl.RestartOptions{PGCtl: h.o.PGCtl, DataDir: h.o.PGData, LogFile: h.o.PGLog}
	go func() {
		ctx := context.WithoutCancel(ctx)
		err := pgctl.RestartImmediate(ctx, opts)
		r := restartResult{o: o, end: time.Now(), err: err}
		// The database clock around the outage: read once it answers again.
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if r.toUS, r.read = h.dbNow(ctx, time.Second), time.Now(); r.toUS != 0 {
				break
			}
		}
		h.sched.restartDone <- r
	}()
}

// restarted records the end of a restart.
func (h *harness) restarted(r restartResult) {
	h.sched.restarting = false
	o := r.o
	o.end = r.end
	o.Took = r.end.Sub(o.start)
	if r.err != nil {
		o.Error = r.err.Error()
		h.logf("PostgreSQL restart failed after %s: %v", cli.FormatDuration(o.Took), r.err)
	} else {
		h.logf("PostgreSQL is back after %s", cli.FormatDuration(o.Took))
	}
	if r.toUS != 0 {
		o.ToUS, o.FromUS = r.toUS, r.toUS-r.read.Sub(o.start).Microseconds()
	}
}

// excludeFromOutages stops following p through the open outages (it was
// frozen or killed: its recovery proves nothing).
func (h *harness) excludeFromOutages(p *fleet.Proc) {
	for _, o := range h.sched.outages {
		for _, w := range o.watch {
			if w.p == p && !o.settled && !w.recovered {
				w.excluded = true
			}
		}
	}
}

// settleOutages follows recoveries; it reports whether every outage is
// settled: each worker recovered or stopped counting, or the timeout hit.
func (h *harness) settleOutages() bool {
	all := true
	for _, o := range h.sched.outages {
		if o.settled {
			continue
		}
		if o.end.IsZero() {
			all = false
			continue
		}
		pending := 0
		for _, w := range o.watch {
			switch {
			case w.excluded || w.recovered:
			case !w.p.Alive() || w.p.Frozen():
				w.excluded = true
			default:
				if calls := h.calls(w.p); calls.LastOK > o.end.UnixNano() {
					w.recovered, w.in = true, time.Unix(0, calls.LastOK).Sub(o.end)
				} else {
					pending++
				}
			}
		}
		since := time.Since(o.end)
		if (pending == 0 && since >= time.Second) || since >= recoveryTimeout+h.o.TTL {
			h.settle(o)
		} else {
			all = false
		}
	}
	return all
}

// settle closes an outage's figures and prints them.
func (h *harness) settle(o *outage) {
	o.settled = true
	var late []string
	for _, w := range o.watch {
		if w.excluded {
			continue
		}
		o.Workers++
		o.Errors += h.calls(w.p).Errors() - w.errorsBefore
		if w.recovered {
			o.Recovered++
			o.RecoveredIn = max(o.RecoveredIn, w.in)
		} else {
			late = append(late, w.p.Name())
		}
	}
	what := "the restart"
	switch {
	case o.Kind == outageTerminate:
		what = fmt.Sprintf("the termination of %s's sessions", o.Worker)
	case isNetFault(o.Kind):
		what = "the " + o.Kind
	case o.Kind == outageFailover:
		what = "the failover"
	}
	if o.Workers == 0 {
		h.logf("after %s: no worker lived through it (killed or frozen first): nothing to count", what)
		return
	}
	if len(late) > 0 {
		h.logf("after %s: %s did not reach the database again within %s", what, strings.Join(late, ", "),
			cli.FormatDuration(recoveryTimeout+h.o.TTL))
		return
	}
	h.logf("after %s: %d of %d workers reached the database again on their own within %s (%d failed calls)",
		what, o.Recovered, o.Workers, cli.FormatDuration(o.RecoveredIn), o.Errors)
}
