// Package work runs the binary's job kinds as a worker process: the logic
// behind `leasehold work`, which the demo also starts as subprocesses.
package work

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/fleet"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/jobkinds"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/payments"
	"github.com/leasehold/leasehold/view"
)

// Options configure a worker process.
type Options struct {
	DB              *cli.DB
	Queues          []string // default: the default queue
	Concurrency     int      // jobs at once per queue
	TTL             time.Duration
	WatcherInterval time.Duration
	DisableWatcher  bool
	PollInterval    time.Duration
	ShutdownTimeout time.Duration
	// Kinds selects the built-in kinds to run (see jobkinds.Select); nil
	// runs them all. The payments ledger table is created, and the
	// provider stand-in started, only when the payment kind runs.
	Kinds []string
	// ProviderURL is the payment provider; empty starts an in-process
	// stand-in.
	ProviderURL string
	// ReconcileInto, when set, puts every queue of Queues under the
	// reconcile policy (leasehold.QueueConfig.Reconcile) with this queue
	// for the reconcile jobs, works it too, and runs the payment
	// reconcilers: it needs the payment kind (see Prepare).
	ReconcileInto string
	// Owner names the worker instance (default host-pid-random). It must
	// be unique among running processes: one that shares it releases the
	// other's running jobs after a failed claim, and they run again. Run
	// warns at start when a lease of a given Owner is still live.
	Owner string
	// UntilIdle stops the worker once its queues hold no pending or
	// processing job of its kinds.
	UntilIdle bool
	// StopOnEOF, when set, stops the worker when the reader reaches EOF
	// (the demo's pipe: the worker stops when its parent goes away).
	StopOnEOF io.Reader
	// Reports, when set, receives the worker's counters as JSON lines
	// (fleet.Report) every ReportEvery and once it has stopped: the demo
	// follows its workers by them.
	Reports     io.Writer
	ReportEvery time.Duration
	// MetricsAddr, when set, is the address (host:port; port 0 lets the
	// system choose, and the log says which) where the worker serves
	// Prometheus metrics at /metrics while it runs.
	MetricsAddr string
	// QueueStatsInterval is how old the metrics' reading of the queue
	// gauges may get before a scrape reads them again from the database
	// (leaseholdprom.Options.QueueStatsInterval); 0 uses the library's
	// default, negative reads and exports none.
	QueueStatsInterval time.Duration
	// Periodic are schedules this worker enqueues (see ParsePeriodic).
	Periodic []leasehold.PeriodicJob
	// ScanEvery, when positive, makes the worker enqueue a payment scan
	// (payments.ScanArgs) at this interval, shared with every worker of
	// the same ReconcileInto (ScanName): its job, in ReconcileInto, inserts
	// a heal job there for each payment of Queues whose charge job
	// completed more than ScanPendingAfter ago without a ledger row. It
	// needs ReconcileInto and the payment kind.
	ScanEvery        time.Duration
	ScanPendingAfter time.Duration
	Logger           *slog.Logger
}

// Run runs workers until ctx ends (or StopOnEOF or UntilIdle says so, or
// a failure no retry mends, an SQLite file removed, replaced or corrupt,
// which it returns as an error), then stops gracefully and returns the
// client's counters. Outcomes it
// could not write at the end (the database unreachable) are counted in
// OutcomesDropped and logged: their leases expire and their jobs come back.
func Run(ctx context.Context, o Options) (view.StatsView, error) {
	o, err := Prepare(o)
	if err != nil {
		return view.StatsView{}, err
	}
	o.Periodic = periodic(o)
	var metrics *metricsServer
	if o.MetricsAddr != "" {
		if metrics, err = startMetrics(o.MetricsAddr, o.QueueStatsInterval, o.Logger); err != nil {
			return view.StatsView{}, err
		}
	}
	defer closeMetrics(metrics, o.Logger)
	client, closeProvider, err := newClient(ctx, o, metrics)
	if err != nil {
		return view.StatsView{}, err
	}
	defer closeProvider()
	warnOwnerInUse(ctx, client, o) // before Start: the leases it finds are not this process's
	if err := client.Start(ctx); err != nil {
		return view.StatsView{}, fmt.Errorf("start workers: %w", err)
	}
	o.Logger.Info("worker started", "owner", client.Owner(), "queues", o.Queues, "kinds", o.Kinds,
		"lease_ttl", o.TTL, "database", o.DB.Target.String(), "periodic", periodicNames(o.Periodic))
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	if o.StopOnEOF != nil {
		go func() { _, _ = io.Copy(io.Discard, o.StopOnEOF); cancel() }()
	}
	if o.UntilIdle {
		go waitIdle(runCtx, cancel, client, o)
	}
	broken := watchFatal(runCtx, client, cancel)
	var reports *fleet.Emitter
	reported := make(chan struct{})
	if o.Reports != nil {
		reports = fleet.NewEmitter(o.Reports)
		go report(runCtx, client, reports, o.ReportEvery, reported)
	} else {
		close(reported)
	}
	<-runCtx.Done()
	<-reported
	// Stop bounds itself: ShutdownTimeout for the handlers, then its own
	// release budget for the last writes. A deadline of ours would only
	// turn a database that stopped answering into a failed exit.
	stopCtx, stopCancel := context.WithCancel(context.Background())
	defer stopCancel()
	if broken.err() != nil {
		stopCancel() // no outcome can be written: cut the handlers off now, not after the shutdown timeout
	}
	o.Logger.Info("stopping: running jobs may finish", "shutdown_timeout", o.ShutdownTimeout, "because", stopReason(ctx, broken))
	err = client.Stop(stopCtx)
	stats := view.NewStatsView(client.Owner(), client.Stats())
	if reports != nil {
		reports.EmitStats(fleet.TypeFinal, stats)
	}
	if n := stats.OutcomesDropped; n > 0 {
		o.Logger.Warn("could not release or record some leases: their jobs come back when the leases expire",
			"leases", n, "lease_ttl", o.TTL)
	}
	if ferr := broken.err(); ferr != nil {
		o.Logger.Error("stopped: the database cannot be used as it is", "err", ferr)
		return stats, fmt.Errorf("%w (the worker stopped)", ferr)
	}
	if err != nil {
		return stats, fmt.Errorf("stop workers: %w", err)
	}
	return stats, nil
}

// stopReason says why a running worker stops: the signal that ended ctx,
// the database it cannot use (broken), or else that it was asked to (its
// standard input closed, or its queues idle with --until-idle).
func stopReason(ctx context.Context, broken *fatalWatch) string {
	switch {
	case ctx.Err() != nil:
		return context.Cause(ctx).Error()
	case broken.err() != nil:
		return "the database cannot be used as it is"
	}
	return "asked to stop"
}

// closeMetrics stops serving metrics, once the client has stopped.
func closeMetrics(m *metricsServer, logger *slog.Logger) {
	if err := m.close(); err != nil {
		logger.Warn("stopping the metrics server", "err", err)
	}
}

// report writes the client's counters to e every period until ctx ends,
// then closes done.
func report(ctx context.Context, c *leasehold.Client, e *fleet.Emitter, every time.Duration, done chan<- struct{}) {
	defer close(done)
	tick(ctx, every, func() bool {
		e.EmitStats(fleet.TypeReport, view.NewStatsView(c.Owner(), c.Stats()))
		return true
	})
}

// tick calls fn every period until ctx ends or fn returns false.
func tick(ctx context.Context, every time.Duration, fn func() bool) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !fn() {
			return
		}
	}
}

// newClient migrates the schema (and, for the payment kind, the payments
// ledger) and builds the client, with metrics when m is not nil; the
// returned function stops the in-process provider, if any.
func newClient(ctx context.Context, o Options, m *metricsServer) (*leasehold.Client, func(), error) {
	noop := func() {}
	res, err := o.DB.Driver.Migrate(ctx)
	if err != nil {
		return nil, noop, fmt.Errorf("migrate %s: %w", o.DB.Target, err)
	}
	if res.From == 0 && res.Applied > 0 {
		// Most often a first run; but a worker pointed at the wrong place
		// (a typo in --db, a search_path naming another schema) would
		// otherwise wait on an empty queue without a word.
		o.Logger.Warn("created the leasehold tables: this database had none, so no job was waiting in it; if you expected jobs, check --db (on PostgreSQL, the URL's search_path)",
			"database", o.DB.Target.String(), "version", res.To)
	}
	deps := jobkinds.Deps{Kinds: o.Kinds, Payments: payments.Options{Reconcile: o.ReconcileInto != ""}}
	closeProvider := noop
	if jobkinds.Runs(o.Kinds, payments.Kind) {
		if deps.Ledger, err = ensureLedger(ctx, o); err != nil {
			return nil, noop, err
		}
		if deps.ProviderURL, closeProvider, err = provider(o); err != nil {
			return nil, noop, err
		}
	}
	cfg := config(o)
	m.configure(&cfg)
	client, err := jobkinds.NewClient(cfg, deps)
	if err == nil {
		err = m.attach(client)
	}
	if err != nil {
		closeProvider()
		return nil, noop, err
	}
	return client, closeProvider, nil
}

// ensureLedger opens the payments ledger, creating its table when it is
// missing, and says so: it is an application table in the user's
// database, not one of leasehold's.
func ensureLedger(ctx context.Context, o Options) (*payments.Ledger, error) {
	sqlDB, err := o.DB.SQL()
	if err != nil {
		return nil, err
	}
	ledger, err := payments.NewLedger(sqlDB, payments.Dialect(o.DB.Target.Dialect))
	if err != nil {
		return nil, err
	}
	created, err := ledger.Ensure(ctx)
	if err != nil {
		return nil, err
	}
	if created {
		o.Logger.Info("created payments ledger table "+payments.LedgerTable+" (kind "+payments.Kind+" records each charge in it)",
			"database", o.DB.Target.String())
	} else {
		o.Logger.Info("recording charges in payments ledger table " + payments.LedgerTable)
	}
	return ledger, nil
}

// provider returns the payment provider's URL, starting the in-process
// stand-in when none was given.
func provider(o Options) (string, func(), error) {
	if o.ProviderURL != "" {
		return o.ProviderURL, func() {}, nil
	}
	p, err := payments.StartProvider(payments.ProviderConfig{})
	if err != nil {
		return "", nil, err
	}
	o.Logger.Info("no --provider: charging payments through an in-process provider stand-in", "url", p.URL())
	return p.URL(), func() { _ = p.Close() }, nil
}

func config(o Options) leasehold.Config {
	queues := map[string]leasehold.QueueConfig{}
	for _, q := range o.Queues {
		queues[q] = leasehold.QueueConfig{MaxWorkers: o.Concurrency}
		if o.ReconcileInto != "" {
			queues[q] = leasehold.QueueConfig{MaxWorkers: o.Concurrency,
				Reconcile: &leasehold.ReconcilePolicy{Queue: o.ReconcileInto}}
		}
	}
	if o.ReconcileInto != "" {
		queues[o.ReconcileInto] = leasehold.QueueConfig{MaxWorkers: o.Concurrency}
	}
	return leasehold.Config{
		Driver: o.DB.Driver, Queues: queues, LeaseTTL: o.TTL, WatcherInterval: o.WatcherInterval,
		DisableWatcher: o.DisableWatcher, PollInterval: o.PollInterval, ShutdownTimeout: o.ShutdownTimeout,
		Owner: o.Owner, Logger: o.Logger, Periodic: o.Periodic,
	}
}

// idleScans is how many scans in a row must find no work before
// --until-idle stops the worker. One scan is one ListJobs per queue and
// kind, not one snapshot, and a job can move between two of them unseen:
// a resolution makes a reconciling payment pending again and its
// reconcile job completes between the scan of the payment's queue and
// that of the reconcile queue; the watcher sends an expired payment to
// reconciling and inserts its reconcile job between the same two scans,
// in the other order. A second scan, a poll interval later, sees the
// pending payment or the reconcile job.
const idleScans = 2

// waitIdle cancels once no pending or processing job of the worker's
// kinds is left in its queues (see idleScope), idleScans scans in a row.
func waitIdle(ctx context.Context, cancel context.CancelFunc, c *leasehold.Client, o Options) {
	queues, kinds := idleScope(o)
	untilIdle(ctx, cancel, o.PollInterval, o.Logger, func(ctx context.Context) (bool, error) {
		return hasWork(ctx, c, queues, kinds)
	})
}

// untilIdle calls busy every interval and cancels once it has reported
// no work idleScans times in a row; a failed scan counts as work.
func untilIdle(ctx context.Context, cancel context.CancelFunc, every time.Duration, log *slog.Logger,
	busy func(context.Context) (bool, error)) {
	quiet := 0
	tick(ctx, every, func() bool {
		b, err := busy(ctx)
		if err != nil {
			log.Warn("idle check failed", "err", err)
		}
		if b || err != nil {
			quiet = 0
			return true
		}
		if quiet++; quiet < idleScans {
			return true
		}
		log.Info("queues are idle; stopping")
		cancel()
		return false
	})
}

// idleScope returns the queues and kinds whose pending and processing
// jobs keep a worker with --until-idle running: its queues and kinds,
// and with a reconcile queue that queue too, with the reconcile and heal
// jobs its reconcilers run (a payment reconciling waits for them). The
// scan's periodic jobs are left out: one is always due next.
func idleScope(o Options) (queues, kinds []string) {
	queues, kinds = o.Queues, o.Kinds
	if o.ReconcileInto == "" {
		return queues, kinds
	}
	if !slices.Contains(queues, o.ReconcileInto) {
		queues = append(slices.Clip(queues), o.ReconcileInto)
	}
	return queues, append(slices.Clip(kinds), leasehold.ReconcileKind, payments.HealKind)
}

// hasWork reports whether any of queues holds a pending or processing job
// of one of kinds.
func hasWork(ctx context.Context, c *leasehold.Client, queues, kinds []string) (bool, error) {
	open := []leasehold.JobState{leasehold.StatePending, leasehold.StateProcessing}
	for _, q := range queues {
		for _, k := range kinds {
			jobs, err := c.ListJobs(ctx, &leasehold.ListParams{States: open, Queue: q, Kind: k, Limit: 1})
			if err != nil {
				return false, err
			}
			if len(jobs) > 0 {
				return true, nil
			}
		}
	}
	return false, nil
}
