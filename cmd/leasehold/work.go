package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/jobkinds"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/payments"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/work"
	leaseholdprom "github.com/leasehold/leasehold/contrib/prometheus"
)

type workFlags struct {
	o           work.Options
	logLevel    string
	stopOnStdin bool
	periodic    []string
	queueStats  time.Duration // --queue-stats-interval; 0: no queue gauges
}

// minReportEvery bounds --report-every from below.
const minReportEvery = 10 * time.Millisecond

// minQueueStats bounds a non-zero --queue-stats-interval from below: the
// reading is a query of the database.
const minQueueStats = time.Second

func (a *app) workCommand() *cobra.Command {
	var f workFlags
	cmd := &cobra.Command{
		Use:   "work",
		Short: "Run workers for the job kinds built into this binary (" + strings.Join(jobkinds.Kinds(), ", ") + "), never an application's",
		Long: `Run workers for the job kinds built into this binary, and only those: they
are for the demo and for trying the queue by hand. An application's own kinds
are never run (their jobs are left alone, whatever their queue): an
application runs its own workers with the library.
Runs until interrupted (SIGINT, SIGTERM or SIGHUP, unless ignored at start as
under nohup, stop it gracefully: running
jobs get --shutdown-timeout to finish, then their leases are released; with
--reconcile-into, a handler cut off mid-charge is not released but left to
expire, and its payment is reconciled; --reconcile-into needs the ` + payments.Kind + `
kind, whose reconcilers run the reconcile jobs). A second signal during that stop ends
the process at once: the leases it still holds expire after --ttl. A stop
signal before the worker has started (while it opens, migrates or waits for
the database) exits 0 too.
Kinds built in (--kind selects some): ` + payments.Kind + ` (args {"payment_id",
"amount_cents","currency"}; charges through --provider, or an in-process
provider stand-in, and records each charge in the payments_ledger table, which
it creates when missing and says so) and ` + jobkinds.SleepKind + ` (args {"duration":"2s"},
plus optionally "snooze":"1s" to snooze the first attempt, then "panic",
"cancel" or "fail" with a message). Jobs of other kinds are left alone
(` + "`leasehold queues`" + ` points at kinds no worker claims). Applies the schema
migrations first.
Prints the worker's counters when it stops, and how many leases it could not
release (the database unreachable): those come back when their TTL runs out.
With --metrics-addr it serves Prometheus metrics at /metrics while it runs.
With --periodic NAME=SPEC:KIND (repeatable) it also enqueues a job of KIND, with
empty args, in the first --queue at each slot of the cron expression SPEC (UTC,
or CRON_TZ=Zone first; @every 10s for an interval): every process given the same
schedule shares its slots, one job per slot (` + "`leasehold periodic list`" + `).
With --reconcile-into and --scan-every it also enqueues, on that interval, a
` + payments.ScanKind + ` job in the reconcile queue (schedule ` + payments.ScanKind + `:QUEUE,
shared by every worker with the same --reconcile-into) that inserts one
` + payments.HealKind + ` job per payment of the --queue queues whose charge job
completed more than --scan-pending-after ago without a ledger row (its webhook
lost): unique per payment while unfinished, so a payment has at most one heal
job at a time.`,
		Args: argNames(),
		RunE: a.runE(func(cmd *cobra.Command, _ []string) error {
			keepRunningOnBrokenPipe()
			return a.work(cmd, &f)
		}),
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&f.o.Queues, "queue", []string{leasehold.DefaultQueue}, "queues to work (comma-separated or repeated)")
	fl.StringSliceVar(&f.o.Kinds, "kind", nil, "kinds to run, of "+strings.Join(jobkinds.Kinds(), ", ")+" (default all)")
	fl.IntVar(&f.o.Concurrency, "concurrency", 10, "jobs run at once per queue")
	fl.Var(cli.NewDurationValue(&f.o.TTL, leasehold.DefaultLeaseTTL, 500*time.Millisecond, 24*time.Hour), "ttl", "lease TTL, 500ms to 24h (heartbeats every TTL/3)")
	fl.Var(cli.NewDurationValue(&f.o.WatcherInterval, leasehold.DefaultWatcherInterval, 10*time.Millisecond, 24*time.Hour), "watcher-interval", "stuck watcher period")
	fl.BoolVar(&f.o.DisableWatcher, "no-watcher", false, "do not run the stuck watcher in this process")
	fl.Var(cli.NewDurationValue(&f.o.PollInterval, leasehold.DefaultPollInterval, 10*time.Millisecond, time.Hour), "poll-interval", "how often idle workers look for jobs")
	fl.Var(cli.NewDurationValue(&f.o.ShutdownTimeout, leasehold.DefaultShutdownTimeout, 10*time.Millisecond, time.Hour), "shutdown-timeout", "how long running jobs may finish at shutdown")
	fl.StringVar(&f.o.ProviderURL, "provider", "", "payment provider base URL (default: an in-process stand-in)")
	fl.StringVar(&f.o.ReconcileInto, "reconcile-into", "", "reconcile the --queue jobs whose lease expires, with reconcile jobs in this queue (worked too); needs the "+payments.Kind+" kind")
	fl.StringVar(&f.o.Owner, "owner", "", "worker instance name written to lease_owner (default host-pid-random); must be unique among running processes: a second process with the same name releases the first's running jobs, which then run again (a live lease of the name is warned of at start)")
	fl.BoolVar(&f.o.UntilIdle, "until-idle", false, "stop once the queues (and the --reconcile-into queue) hold no pending or processing job of the built-in kinds, two scans a poll interval apart")
	fl.StringVar(&f.o.MetricsAddr, "metrics-addr", "", "serve Prometheus metrics at /metrics on this address (host:port; port 0 picks one, logged)")
	fl.Var(cli.NewDurationValue(&f.queueStats, leaseholdprom.DefaultQueueStatsInterval, 0, 24*time.Hour), "queue-stats-interval",
		"with --metrics-addr: read the queue gauges (leasehold_queue_jobs, leasehold_queue_oldest_due_seconds) from the database at most this often, at scrapes; 0: neither read nor export them. "+
			"One process reading them is enough (leasehold serve, which reads them, or one worker): give the other workers 0")
	fl.StringArrayVar(&f.periodic, "periodic", nil, "enqueue a job on a schedule: NAME=SPEC:KIND, e.g. 'tick=@every 1s:leasehold.sleep' or 'nightly=0 3 * * *:leasehold.sleep' (repeatable; cron in UTC, or CRON_TZ=Europe/Paris before the fields; the machine's own zone, Local or localtime, is refused)")
	fl.Var(cli.NewDurationValue(&f.o.ScanEvery, 0, 10*time.Millisecond, 24*time.Hour), "scan-every",
		"with --reconcile-into: scan for payments pending too long this often, one heal job per payment (not set: no scan)")
	fl.Var(cli.NewDurationValue(&f.o.ScanPendingAfter, time.Minute, time.Millisecond, 30*24*time.Hour), "scan-pending-after",
		"the scan heals payments whose charge job completed this long ago without a ledger row")
	fl.StringVar(&f.logLevel, "log-level", "info", "log level on stderr: debug, info, warn, error")
	fl.BoolVar(&f.stopOnStdin, "stop-on-stdin-eof", false, "stop when standard input is closed (used by the demo)")
	_ = fl.MarkHidden("stop-on-stdin-eof")
	fl.Var(cli.NewDurationValue(&f.o.ReportEvery, 0, minReportEvery, time.Hour), "report-every",
		"write the counters as JSON lines on stdout this often and when stopping, instead of the summary (used by the demo)")
	_ = fl.MarkHidden("report-every")
	return cmd
}

func (a *app) work(cmd *cobra.Command, f *workFlags) error {
	if f.o.Concurrency < 1 || f.o.Concurrency > leasehold.MaxMaxWorkers {
		return cli.Usagef("--concurrency %d is out of range 1..%d", f.o.Concurrency, leasehold.MaxMaxWorkers)
	}
	if cmd.Flags().Changed("queue") && len(f.o.Queues) == 0 {
		return cli.Usagef("--queue is empty: name the queues to work (default %s)", leasehold.DefaultQueue)
	}
	if err := cli.RefuseEmpty(cmd.Flags(), "kind", "provider", "reconcile-into", "owner", "metrics-addr", "log-level"); err != nil {
		return err
	}
	for _, q := range f.o.Queues {
		if err := leasehold.ValidateQueue(q); err != nil {
			return cli.FlagError("--queue", err)
		}
		if q == f.o.ReconcileInto {
			return cli.Usagef("--reconcile-into %s: the reconcile queue must not be one of --queue", q)
		}
	}
	if f.o.ReconcileInto != "" {
		if err := leasehold.ValidateQueue(f.o.ReconcileInto); err != nil {
			return cli.FlagError("--reconcile-into", err)
		}
	}
	if f.o.MetricsAddr != "" {
		if err := cli.CheckAddr("--metrics-addr", f.o.MetricsAddr); err != nil {
			return err
		}
	}
	if err := f.setQueueStats(cmd); err != nil {
		return err
	}
	queue := leasehold.DefaultQueue
	if len(f.o.Queues) > 0 {
		queue = f.o.Queues[0]
	}
	for _, p := range f.periodic {
		job, err := work.ParsePeriodic(p, queue)
		if err != nil {
			return cli.FlagError("--periodic", err)
		}
		f.o.Periodic = append(f.o.Periodic, job)
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(f.logLevel)); err != nil {
		return cli.Usagef("--log-level %q: want debug, info, warn or error", f.logLevel)
	}
	var err error
	if f.o, err = work.Prepare(f.o); err != nil {
		return err
	}
	db, err := a.open(cmd, true)
	if err != nil {
		return a.stoppedBeforeStart(cmd, err)
	}
	defer db.Close()
	f.o.DB, f.o.Logger = db, a.logger(level)
	if f.stopOnStdin {
		f.o.StopOnEOF = os.Stdin
	}
	if f.o.ReportEvery > 0 {
		f.o.Reports = a.stdout
	}
	stats, err := work.Run(cmd.Context(), f.o)
	if stats.Owner == "" { // never started
		return a.stoppedBeforeStart(cmd, err)
	}
	if f.o.Reports != nil { // the counters are written
		return err
	}
	// The counters are printed even when stopping failed, and not
	// printing them to a reader that went away is no failure of the stop.
	var perr error
	if a.jsonOut {
		perr = cli.WriteJSON(a.stdout, stats)
	} else {
		_, perr = fmt.Fprintln(a.stdout, cli.StatsSummary(stats, f.o.TTL))
	}
	if errors.Is(perr, syscall.EPIPE) {
		perr = nil
	}
	return errors.Join(err, perr)
}

// setQueueStats checks --queue-stats-interval and sets the worker's
// option from it: 0 turns the queue gauges off.
func (f *workFlags) setQueueStats(cmd *cobra.Command) error {
	if !cmd.Flags().Changed("queue-stats-interval") {
		return nil // the library's default
	}
	switch {
	case f.o.MetricsAddr == "":
		return cli.Usagef("--queue-stats-interval needs --metrics-addr")
	case f.queueStats == 0:
		f.o.QueueStatsInterval = -1
	case f.queueStats < minQueueStats:
		return cli.Usagef("--queue-stats-interval %s is too short (minimum %s, or 0 for none)",
			cli.FormatDuration(f.queueStats), cli.FormatDuration(minQueueStats))
	default:
		f.o.QueueStatsInterval = f.queueStats
	}
	return nil
}

// stoppedBeforeStart returns err, the failure of a worker that never
// started, unless a stop signal caused it (the context canceled while the
// database was opened, migrated or waited for): a stop asked for, not a
// failure, so that a supervisor does not count it as one. It then says so
// on stderr and returns nil.
func (a *app) stoppedBeforeStart(cmd *cobra.Command, err error) error {
	ctx := cmd.Context()
	if err == nil || ctx.Err() == nil || !errors.Is(err, context.Canceled) {
		return err
	}
	_, werr := fmt.Fprintf(a.stderr, "leasehold: %v before the worker started: stopped\n", context.Cause(ctx))
	return werr
}
