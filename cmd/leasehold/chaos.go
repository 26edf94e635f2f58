package main

import (
	"fmt"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/chaos"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
)

const chaosLong = `Run K worker processes against one database while injecting faults, then
check the lease contract and print the figures.

Each payment job is charged through an in-process stand-in provider with the
job's idempotency key, and recorded in a ledger table in the same transaction
as its fenced completion. The schedule, printed as it happens: SIGKILL of a
random worker (restarted at once), SIGSTOP of a worker in the middle of a
charge for longer than the lease TTL (then SIGCONT: it wakes believing it still
owns its jobs), and on PostgreSQL ` + "`pg_ctl restart -m immediate`" + ` (needs --pgdata;
as root pg_ctl runs as the postgres user), pg_terminate_backend of a
worker's sessions, and network faults between some workers and the database
(--net-fault-every: a TCP proxy cuts, delays or stalls their traffic). As
root, the proxy runs in a network namespace of its own, the workers behind it
in another, and the run starts its own PostgreSQL server on the namespaces'
bridge (--db is then not used); otherwise it runs on loopback in front of
--db (--net-mode).

With --failover sync|async the run starts a primary and a streaming standby
of its own instead of using --db, SIGKILLs the primary mid-run, promotes the
standby and checks that no acknowledged commit was lost (reported, not
judged, for an asynchronous standby).

Once every job is finished it checks: no job left pending; exactly one ledger
effect per completed job, written by the lease that completed it; refused
completions after freezes, none with an effect; no two live leases of one job
at once; every killed worker's leases claimed again within TTL + watcher
interval + poll interval; every worker back on its own after each outage.
Exit code 1 names each invariant that failed.

The run uses a schema of its own on PostgreSQL (dropped afterwards unless a
check failed or --keep) and, without --db, a temporary SQLite file: it
ignores $` + cli.EnvDatabaseURL + `, so that it never kills workers or restarts
a database that only the environment named.`

func (a *app) chaosCommand() *cobra.Command {
	var (
		o         chaos.Options
		workerExe string
	)
	cmd := &cobra.Command{
		Use:   "chaos",
		Short: "Kill, freeze and cut off workers and the database, then check every lease invariant",
		Long:  chaosLong,
		Example: `  leasehold chaos
  leasehold chaos --db postgres://postgres@localhost/app --workers 8 --jobs 100000 \
      --kill-every 500ms --pg-restarts 2 --pgdata /var/lib/postgresql/16/main`,
		Args: argNames(),
		RunE: a.runE(func(cmd *cobra.Command, _ []string) error { return a.chaos(cmd, o, workerExe) }),
	}
	fl := cmd.Flags()
	fl.IntVar(&o.Workers, "workers", chaos.DefaultWorkers, "worker processes (K)")
	fl.IntVar(&o.Jobs, "jobs", chaos.DefaultJobs, "payment jobs to enqueue (N)")
	fl.IntVar(&o.Concurrency, "concurrency", chaos.DefaultConcurrency, "jobs each worker runs at once")
	dur := func(p *time.Duration, name string, def, lo time.Duration, usage string) {
		fl.Var(cli.NewDurationValue(p, def, lo, 24*time.Hour), name, usage)
	}
	dur(&o.TTL, "ttl", chaos.DefaultTTL, 500*time.Millisecond, "lease TTL of the workers")
	dur(&o.WatcherInterval, "watcher-interval", chaos.DefaultWatcherInterval, 10*time.Millisecond, "stuck watcher period of the workers")
	dur(&o.PollInterval, "poll-interval", chaos.DefaultPollInterval, 10*time.Millisecond, "poll period of the workers")
	dur(&o.KillEvery, "kill-every", chaos.DefaultKillEvery, 0, "SIGKILL a random worker this often (0: never)")
	dur(&o.FreezeEvery, "freeze-every", chaos.DefaultFreezeEvery, 0, "SIGSTOP a worker mid-charge this often (0: never)")
	dur(&o.FreezeFor, "freeze-for", 0, 0, "how long a worker stays frozen (default 2 x TTL + watcher interval)")
	fl.IntVar(&o.PGRestarts, "pg-restarts", 0, "PostgreSQL restarts (pg_ctl restart -m immediate), spread over the run")
	dur(&o.PGTerminateEvery, "pg-terminate-every", 0, 0, "pg_terminate_backend a worker's sessions this often (0: never)")
	fl.StringVar(&o.PGData, "pgdata", "", "data directory of the PostgreSQL server to restart")
	fl.StringVar(&o.PGCtl, "pg-ctl", "", "pg_ctl program (default: from the PATH or /usr/lib/postgresql/*/bin)")
	fl.StringVar(&o.PGLog, "pg-log", "", "log file for the restarted server (default: discarded)")
	dur(&o.NetFaultEvery, "net-fault-every", 0, 0, "inject a network fault between some workers and PostgreSQL this often (0: never)")
	dur(&o.NetFaultFor, "net-fault-for", 0, 0, "how long a network fault lasts (default 2 x TTL + watcher interval)")
	dur(&o.NetDelay, "net-delay", 0, 0, "reply delay of a delay fault (default 1.5 x TTL)")
	fl.IntVar(&o.NetWorkers, "net-workers", 0, "workers connected through the faulty TCP proxy (default half, rounded up)")
	fl.StringVar(&o.NetFaults, "net-faults", "partition,delay,stall", "network faults to inject, in turn")
	fl.StringVar(&o.NetMode, "net-mode", chaos.NetModeAuto, "where the network faults' proxy runs: netns (a network namespace of its own; needs root), loopback (in this process), auto (netns when possible)")
	fl.IntVar(&o.NetPort, "net-port", chaos.DefaultNetPort, "port of the server a netns run starts on the bridge")
	fl.StringVar(&o.Failover, "failover", "", "start a primary and a standby (sync or async), SIGKILL the primary mid-run, promote the standby")
	fl.StringVar(&o.FailoverDir, "failover-dir", "", "directory of the failover run's servers (default: a temporary one)")
	fl.Float64Var(&o.FailoverAt, "failover-at", 0.4, "share of the jobs completed when the primary is killed")
	dur(&o.StandbyDelay, "standby-delay", 0, 0, "delay of the replication stream to the failover run's standby (0: none)")
	fl.IntVar(&o.PrimaryPort, "primary-port", 5444, "port (socket name) of the failover run's primary")
	fl.IntVar(&o.StandbyPort, "standby-port", 5445, "port (socket name) of the failover run's standby")
	dur(&o.Latency, "latency", chaos.DefaultLatency, 0, "mean response time of the stand-in provider")
	fl.Float64Var(&o.StallProb, "stall-prob", chaos.DefaultStallProb, "share of charges that stall for --stall-for (0: none)")
	dur(&o.StallFor, "stall-for", 0, 0, "how long a stalled charge waits (default 1.5 x TTL)")
	dur(&o.Timeout, "timeout", chaos.DefaultTimeout, time.Second, "give up (and fail) if the jobs have not drained by then")
	fl.BoolVar(&o.Keep, "keep", false, "keep the run's schema or SQLite file even when every check passes")
	fl.Uint64Var(&o.Seed, "seed", 0, "seed of the schedule's random choices (default: random)")
	fl.StringVar(&workerExe, "worker-exe", "", "binary the workers run (default: this one)")
	_ = fl.MarkHidden("worker-exe")
	for _, name := range []string{"freeze-for", "stall-for", "pg-terminate-every", "net-fault-every", "net-fault-for", "net-delay"} {
		fl.Lookup(name).DefValue = "" // their defaults are in the usage text
	}
	fl.Lookup("net-workers").DefValue = "0" // an int's zero: its default is in the usage text
	cmd.AddCommand(a.chaosWorkerCommand(), a.chaosProxyCommand())
	return cmd
}

func (a *app) chaos(cmd *cobra.Command, o chaos.Options, workerExe string) error {
	if err := cli.PositiveInts(cmd.Flags(), "workers", "jobs", "concurrency"); err != nil {
		return err
	}
	t := cli.Target{Dialect: cli.SQLite, Default: true}
	if cmd.Flags().Changed("db") {
		var err error
		if t, err = a.target(cmd); err != nil {
			return err
		}
	}
	for _, d := range []*time.Duration{&o.KillEvery, &o.FreezeEvery} {
		if *d == 0 {
			*d = -1 // off
		}
	}
	if o.StallProb == 0 {
		o.StallProb = -1
	}
	o.Target, o.Executable, o.Out = t, workerExe, a.stdout
	if o.Executable == "" {
		exe, err := os.Executable()
		if err != nil {
			return cli.Failf("find the leasehold executable for the workers: %w", err)
		}
		o.Executable = exe
	}
	if a.jsonOut {
		o.Out = a.stderr
	}
	rep, err := chaos.Run(cmd.Context(), o)
	if err != nil {
		return err
	}
	if a.jsonOut {
		if err := cli.WriteJSON(a.stdout, rep); err != nil {
			return err
		}
	} else {
		rep.Print(a.stdout)
	}
	if !rep.OK() {
		failed := append(rep.Failed(), rep.Problems...)
		return cli.Failf("chaos: invariants failed: %s", strings.Join(failed, ", "))
	}
	return nil
}

func (a *app) chaosWorkerCommand() *cobra.Command {
	var o chaos.WorkerOptions
	cmd := &cobra.Command{
		Use:    "worker",
		Short:  "Run one worker process of the chaos harness (started by leasehold chaos)",
		Hidden: true,
		Args:   argNames(),
		RunE: a.runE(func(cmd *cobra.Command, _ []string) error {
			t, err := a.target(cmd)
			if err != nil {
				return err
			}
			db, err := chaos.OpenWorkerDB(cmd.Context(), t)
			if err != nil {
				return err
			}
			defer db.Close()
			o.DB, o.Out, o.Logger = db, a.stdout, a.logger(slog.LevelWarn)
			o.ReportEvery = chaos.DefaultReportEvery
			if err := chaos.RunWorker(cmd.Context(), o); err != nil {
				return fmt.Errorf("chaos worker %s: %w", o.Owner, err)
			}
			return nil
		}),
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Owner, "owner", "", "lease owner of this worker")
	fl.IntVar(&o.Concurrency, "concurrency", chaos.DefaultConcurrency, "jobs at once")
	fl.DurationVar(&o.TTL, "ttl", chaos.DefaultTTL, "lease TTL")
	fl.DurationVar(&o.WatcherInterval, "watcher-interval", chaos.DefaultWatcherInterval, "stuck watcher period")
	fl.DurationVar(&o.PollInterval, "poll-interval", chaos.DefaultPollInterval, "poll period")
	fl.DurationVar(&o.ShutdownTimeout, "shutdown-timeout", 10*time.Second, "how long running jobs may finish at shutdown")
	fl.StringVar(&o.ProviderURL, "provider", "", "payment provider base URL")
	return cmd
}
