package chaos

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
)

// outageFailover is the primary's death until the promoted standby
// accepts commits.
const outageFailover = "failover"

// commitProbeTimeout bounds the probe commit on the promoted standby: in
// sync mode, while it still names itself a synchronous standby to wait
// for, the commit never returns.
const commitProbeTimeout = 2 * time.Second

// failoverResult is the end of a failover run in the background.
type failoverResult struct {
	o   *outage
	f   *FailoverFigures
	end time.Time
}

// startFailover SIGKILLs the primary, promotes the standby and, in sync
// mode, measures the blocked commit and removes synchronous_standby_names,
// in the background.
func (h *harness) startFailover(ctx context.Context, completed int64) {
	procs := h.current()
	o := h.newOutage(outageFailover, procs)
	o.FromUS = time.Now().UnixMicro()
	h.sched.failingOver, h.sched.failovers = true, 1
	h.sched.outages = append(h.sched.outages, o)
	f := &FailoverFigures{Mode: h.pair.mode, At: o.At, CompletedAt: completed, Listeners: len(procs)}
	owners := make([]string, len(procs))
	for i, p := range procs {
		owners[i] = p.Owner()
	}
	h.logf("SIGKILL of the primary (postmaster and every backend) at %d completed jobs; %d workers running", completed, len(procs))
	go func() {
		ctx := context.WithoutCancel(ctx)
		if err := h.failover(ctx, f); err != nil {
			f.Error = err.Error()
		}
		end := time.Now()
		f.DownSeconds = end.Sub(o.start).Seconds()
		f.ListenersBack, f.ListenSeconds = h.waitListeners(ctx, owners, end)
		h.sched.failoverDone <- failoverResult{o: o, f: f, end: end}
	}()
}

func (h *harness) failover(ctx context.Context, f *FailoverFigures) error {
	p := h.pair
	if err := p.primary.Kill(); err != nil {
		return err
	}
	if p.link != nil {
		p.link.Cut() // the stream in flight dies with the primary's machine
	}
	start := time.Now()
	if err := p.standby.Promote(ctx); err != nil {
		return err
	}
	f.PromoteSeconds = time.Since(start).Seconds()
	took, err := h.probeCommit(ctx, commitProbeTimeout)
	f.ProbeSeconds = took.Seconds()
	switch {
	case errors.Is(err, context.DeadlineExceeded):
		f.CommitBlocked = true
	case err != nil:
		return err
	}
	if p.mode == FailoverSync {
		if err := h.dropSyncStandby(ctx); err != nil {
			return err
		}
		took, err = h.probeCommit(ctx, 30*time.Second)
		if err != nil {
			return fmt.Errorf("commit after removing synchronous_standby_names: %w", err)
		}
		f.UnblockedSeconds = took.Seconds()
	}
	return nil
}

// probeCommit commits one row on the promoted standby within d.
func (h *harness) probeCommit(ctx context.Context, d time.Duration) (time.Duration, error) {
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(cctx, h.pair.standby.URL())
	if err != nil {
		return 0, fmt.Errorf("connect to the promoted standby: %w", err)
	}
	defer func() { _ = conn.Close(context.Background()) }()
	ctx, cancel = context.WithTimeout(ctx, d)
	defer cancel()
	start := time.Now()
	_, err = conn.Exec(ctx, "INSERT INTO "+h.ns.schema+".failover_probe DEFAULT VALUES")
	if err != nil && ctx.Err() != nil {
		err = context.DeadlineExceeded
	}
	return time.Since(start), err
}

// dropSyncStandby removes synchronous_standby_names on the promoted
// standby: it names the standby itself, which nobody replicates to now.
func (h *harness) dropSyncStandby(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, h.pair.standby.URL())
	if err != nil {
		return fmt.Errorf("connect to the promoted standby: %w", err)
	}
	defer func() { _ = conn.Close(context.Background()) }()
	for _, stmt := range []string{"ALTER SYSTEM SET synchronous_standby_names = ''", "SELECT pg_reload_conf()"} {
		if _, err := conn.Exec(ctx, stmt); err != nil {
			return fmt.Errorf("%s: %w", stmt, err)
		}
	}
	h.logf("promoted standby: synchronous_standby_names removed (ALTER SYSTEM, pg_reload_conf)")
	return nil
}

// listenSQL counts the LISTEN sessions of the named workers.
const listenSQL = `SELECT count(DISTINCT application_name) FROM pg_stat_activity
	WHERE application_name = ANY($1) AND query ILIKE 'LISTEN%'`

// waitListeners waits (up to 30s from the end of the failover) until
// every worker named has a LISTEN session on the promoted standby; it
// returns how many did and when the last one was seen.
func (h *harness) waitListeners(ctx context.Context, owners []string, end time.Time) (int, float64) {
	conn, err := pgx.Connect(ctx, h.pair.standby.URL())
	if err != nil {
		return 0, 0
	}
	defer func() { _ = conn.Close(context.Background()) }()
	n := 0
	for time.Since(end) < 30*time.Second {
		if err := conn.QueryRow(ctx, listenSQL, owners).Scan(&n); err == nil && n >= len(owners) {
			break
		}
		time.Sleep(100 * time.Millisecond)
	}
	return n, time.Since(end).Seconds()
}

// failedOver records the end of the failover.
func (h *harness) failedOver(r failoverResult) {
	s := &h.sched
	s.failingOver = false
	o, f := r.o, r.f
	o.end, o.Took, o.ToUS = r.end, r.end.Sub(o.start), r.end.UnixMicro()
	if f.Error != "" {
		o.Error = f.Error
		h.logf("failover failed: %s", f.Error)
	}
	h.failoverFigures = f
	blocked := "returned"
	if f.CommitBlocked {
		blocked = "did NOT return (blocked waiting for the synchronous standby it names)"
	}
	h.logf("standby promoted in %.2fs; a commit on it %s within %.1fs; writable %.2fs after the kill; %d/%d workers LISTEN on it again",
		f.PromoteSeconds, blocked, f.ProbeSeconds, f.DownSeconds, f.ListenersBack, f.Listeners)
}

// describeFailover is the failover part of Options.describe.
func (o Options) describeFailover() string {
	if o.Failover == "" {
		return ""
	}
	return fmt.Sprintf(", failover to a %s standby at %.0f%% of the jobs", o.Failover, 100*o.FailoverAt)
}

func validFailover(mode string) bool {
	return mode == "" || mode == FailoverSync || mode == FailoverAsync
}

// failoverUsage is the usage error for --failover with settings it
// cannot be combined with.
func failoverUsage(o Options) error {
	var bad []string
	if !o.Target.Default {
		bad = append(bad, "--db (the run starts its own primary and standby)")
	}
	if o.PGRestarts > 0 || o.NetFaultEvery > 0 {
		bad = append(bad, "--pg-restarts, --net-fault-every")
	}
	if len(bad) == 0 {
		return nil
	}
	return cli.Usagef("--failover cannot be combined with %s", strings.Join(bad, ", "))
}

// countFailover completes the failover's figures once the workers
// stopped: the commit log and the old primary against the promoted
// standby.
func (h *harness) countFailover(ctx context.Context, r *Report, now *dbFacts) {
	f := h.failoverFigures
	if h.commits == nil || f == nil {
		return
	}
	// Each comparison keeps its own error: one must not hide the other's.
	var err error
	if f.Acked, f.AckedLost, err = h.commits.finish(ctx); err != nil {
		f.CommitLogError = err.Error()
	}
	if f.Lost, err = h.compareOldPrimary(ctx, now); err != nil {
		f.Lost.Error = err.Error()
	}
	r.Failover = f
}
