package main

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/bench"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
)

type benchFlags struct {
	o         bench.Options
	jsonPath  string
	chartPath string
	sustChart string
	hold      string
	profile   string
	memProf   string
	mutexProf string
	execTrace string
	from      string
}

func (a *app) benchCommand() *cobra.Command {
	var f benchFlags
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure throughput, pickup latency, insert rate and lease cost on a database",
		Long: `Measure leasehold on the database (PostgreSQL or SQLite) and print a table:

  insert   bulk insert rate (COPY on PostgreSQL) of --jobs jobs;
  drain    --jobs no-op jobs inserted first, then the time a client with default
           settings and each --workers count takes to complete them all; with
           --metrics, then --metrics-rounds rounds of the default drain without
           and with Prometheus metrics attached (registry gathered every
           second), and with --tracing with metrics and OpenTelemetry tracing
           sampled at --trace-sample and at every span, in rotating order, and
           the median of each one's ratio to the round's plain drain;
  ceiling  the same jobs claimed and completed by bare SQL loops (batched
           conditional-UPDATE claim and fenced batched completion, attempt history
           included, no engine), and each drain's ratio to it: the default drain's
           is the median over --ceiling-rounds rounds of one drain and one ceiling
           (drain first, then ceiling first, alternating), the others' against the
           ceilings measured just before and after them;
  latency  jobs inserted by another client at --rate per second: time from insert
           to handler start (p50/p95/p99), with LISTEN/NOTIFY and poll-only
           (SQLite: the in-process wake);
  lease    --lease-jobs jobs in flight that sleep past several heartbeat intervals,
           and the heartbeat statements per second they cost;
  idle     one client serving --idle-queues queues with no jobs: statements per
           second over --idle-for (server-side), then jobs inserted by another
           client into random queues at --idle-rate: pickup latency, with
           LISTEN/NOTIFY and poll-only (SQLite: in-process wake and poll-only).
  sustained (PostgreSQL, only when named in --phases) jobs inserted at
           --sustain-rate per second for --sustain-for and drained by a worker
           with default settings and FinishedRetention --sustain-retention:
           per --sustain-window the jobs inserted and completed, the backlog, the
           claim latency (insert to handler start), the process's heap and RSS,
           the tables' sizes and dead rows; first against last minute and, with
           --hold-tx START:DURATION, before against during one transaction held
           open (which keeps vacuum from removing dead rows).

Statements per job come from pg_stat_statements when the server has it loaded
(the bench creates the extension and resets it before each measurement), else
from the driver calls. Every measurement runs in a scratch schema (PostgreSQL)
or a scratch file beside the database file (SQLite), dropped afterwards.`,
		Example: `  leasehold bench --db postgres://localhost/leasehold --out bench.json --chart bench.png
  leasehold bench --db sqlite:/tmp/bench.db --phases drain,ceiling
  leasehold bench --db postgres://localhost/leasehold --phases sustained --hold-tx 5m:5m --sustain-chart sustained.png`,
		Args: argNames(),
		RunE: a.runE(func(cmd *cobra.Command, _ []string) error { return a.bench(cmd, &f) }),
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&f.o.Phases, "phases", bench.AllPhases, "phases to run")
	fl.IntVar(&f.o.Jobs, "jobs", bench.DefaultJobs, "jobs per insert, drain and ceiling measurement")
	fl.IntSliceVar(&f.o.Workers, "workers", bench.DefaultWorkers, "worker counts of the drain sweep")
	fl.BoolVar(&f.o.Metrics, "metrics", false, "compare the default drain with and without Prometheus metrics")
	fl.IntVar(&f.o.MetricsRounds, "metrics-rounds", bench.DefaultMetricsRounds, "--metrics: pairs of drains with and without metrics")
	fl.BoolVar(&f.o.Tracing, "tracing", false, "--metrics: add drains with metrics and OpenTelemetry tracing (SDK, parent-based ratio sampler, batch span processor), at --trace-sample and at every span")
	fl.Float64Var(&f.o.TraceSample, "trace-sample", bench.DefaultTraceSample, "--tracing: ratio of traces sampled in the first traced drain (1: only every span)")
	fl.IntVar(&f.o.RetryEvery, "retry-every", 0, "drains: fail every job whose id is a multiple of N, with an error of its own, retried an hour later (0: none)")
	fl.IntVar(&f.o.CeilingLoops, "ceiling-loops", bench.DefaultCeilingLoops, "concurrent bare-SQL loops")
	fl.IntVar(&f.o.CeilingBatch, "ceiling-batch", bench.DefaultCeilingBatch, "jobs per bare-SQL claim")
	fl.IntVar(&f.o.CeilingRounds, "ceiling-rounds", bench.DefaultCeilingRounds, "rounds of one default drain and one ceiling, in alternating order")
	fl.IntVar(&f.o.Rate, "rate", bench.DefaultRate, "pickup latency: jobs inserted per second")
	fl.Var(cli.NewDurationValue(&f.o.LatencyFor, bench.DefaultLatencyFor, 10*time.Millisecond, time.Hour), "latency-for", "pickup latency: how long to insert")
	fl.IntVar(&f.o.LeaseJobs, "lease-jobs", bench.DefaultLeaseJobs, "lease overhead: jobs in flight at once")
	fl.Var(cli.NewDurationValue(&f.o.LeaseTTL, bench.DefaultLeaseTTL, 300*time.Millisecond, time.Hour), "lease-ttl", "lease overhead: lease TTL (heartbeat every TTL/3)")
	fl.Var(cli.NewDurationValue(&f.o.LeaseHold, bench.DefaultLeaseHold, 10*time.Millisecond, time.Hour), "lease-hold", "lease overhead: how long each job sleeps")
	fl.IntVar(&f.o.IdleQueues, "idle-queues", bench.DefaultIdleQueues, "idle cost: queues of the idle client")
	fl.Var(cli.NewDurationValue(&f.o.IdleFor, bench.DefaultIdleFor, time.Second, time.Hour), "idle-for", "idle cost: how long statements are counted")
	fl.IntVar(&f.o.IdleRate, "idle-rate", bench.DefaultIdleRate, "idle cost: jobs inserted per second into random queues afterwards")
	fl.Var(cli.NewDurationValue(&f.o.IdlePickupFor, bench.DefaultIdlePickupFor, 100*time.Millisecond, time.Hour), "idle-pickup-for", "idle cost: how long to insert")
	fl.Var(cli.NewDurationValue(&f.o.Timeout, bench.DefaultPhaseTimeout, time.Second, 24*time.Hour), "timeout", "give up a measurement after this long")
	fl.Var(cli.NewDurationValue(&f.o.SustainFor, bench.DefaultSustainFor, time.Second, 24*time.Hour), "sustain-for", "sustained: how long to insert and drain")
	fl.IntVar(&f.o.SustainRate, "sustain-rate", bench.DefaultSustainRate, "sustained: jobs inserted per second")
	fl.Var(cli.NewDurationValue(&f.o.SustainRetention, bench.DefaultSustainRetention, time.Second, 24*time.Hour), "sustain-retention", "sustained: the worker's FinishedRetention")
	fl.Var(cli.NewDurationValue(&f.o.SustainWindow, bench.DefaultSustainWindow, 100*time.Millisecond, time.Hour), "sustain-window", "sustained: length of one reported window")
	fl.StringVar(&f.hold, "hold-tx", "", `sustained: hold one REPEATABLE READ transaction open, "START:DURATION" into the run (such as 5m:5m)`)
	fl.StringVar(&f.sustChart, "sustain-chart", "", "draw the sustained run's throughput and latency over time as a PNG in this file")
	fl.StringVar(&f.jsonPath, "out", "", "write the figures as JSON to this file")
	fl.StringVar(&f.chartPath, "chart", "", "draw throughput against worker count as a PNG in this file")
	fl.StringVar(&f.profile, "cpuprofile", "", "write a Go CPU profile of the whole run to this file")
	fl.StringVar(&f.memProf, "memprofile", "", "write a Go heap profile (allocations of the whole run) to this file")
	fl.StringVar(&f.mutexProf, "mutexprofile", "", "write a Go mutex profile (contention on sync.Mutex, SQLite's own mutexes among them, over the whole run) to this file")
	fl.StringVar(&f.execTrace, "trace", "", "write a Go execution trace of the whole run to this file (go tool trace: where goroutines ran, waited and blocked)")
	fl.StringVar(&f.from, "from", "", "measure nothing: print (and chart) the figures of a JSON file written by --out")
	return cmd
}

func (a *app) bench(cmd *cobra.Command, f *benchFlags) error {
	err := cli.PositiveInts(cmd.Flags(), "jobs", "metrics-rounds", "ceiling-loops", "ceiling-batch",
		"ceiling-rounds", "rate", "lease-jobs", "idle-queues", "idle-rate", "sustain-rate")
	if err != nil {
		return err
	}
	if cmd.Flags().Changed("phases") && len(f.o.Phases) == 0 {
		return cli.Usagef("--phases is empty: name some of %s", strings.Join(bench.KnownPhases, ", "))
	}
	if f.from != "" {
		rep, err := bench.ReadJSONFile(f.from)
		if err != nil {
			return cli.UsageError(fmt.Errorf("--from: %w", err))
		}
		return a.benchReport(rep, f)
	}
	if f.o.HoldAt, f.o.HoldFor, err = bench.ParseHold(f.hold); err != nil {
		return cli.UsageError(err)
	}
	t, err := a.target(cmd)
	if err != nil {
		return err
	}
	if t.Dialect == cli.Postgres {
		f.o.URL = t.URL
	} else {
		f.o.Path = t.Path
	}
	f.o.Progress, f.o.Logger = a.stderr, a.logger(slog.LevelError)
	if f.profile != "" {
		stop, err := startProfile(f.profile)
		if err != nil {
			return cli.Failf("cpu profile: %w", err)
		}
		defer stop()
	}
	if f.execTrace != "" {
		stop, err := startTrace(f.execTrace)
		if err != nil {
			return cli.Failf("execution trace: %w", err)
		}
		defer stop()
	}
	late, err := createLateProfiles(f)
	if err != nil {
		return err
	}
	defer closeLateProfiles(late)
	rep, err := bench.Run(cmd.Context(), f.o)
	if err != nil {
		return err // a usage error (bad options) or a failure, as chaos's
	}
	for _, p := range late {
		err := pprof.Lookup(p.name).WriteTo(p.file, 0)
		if cerr := p.file.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return cli.Failf("%s profile: %w", p.name, err)
		}
	}
	return a.benchReport(rep, f)
}

// benchReport writes the report where the flags say.
func (a *app) benchReport(rep *bench.Report, f *benchFlags) error {
	if f.jsonPath != "" {
		if err := bench.WriteJSONFile(f.jsonPath, rep); err != nil {
			return cli.Failf("%w", err)
		}
	}
	if f.chartPath != "" {
		if err := bench.WriteChart(f.chartPath, rep); err != nil {
			return cli.Failf("%w", err)
		}
	}
	if f.sustChart != "" {
		if err := bench.WriteSustainedChart(f.sustChart, rep); err != nil {
			return cli.Failf("%w", err)
		}
	}
	if a.jsonOut {
		return cli.WriteJSON(a.stdout, rep)
	}
	if err := bench.WriteTable(a.stdout, rep); err != nil {
		return fmt.Errorf("print: %w", err)
	}
	return nil
}

// lateProfile is a runtime profile written once the run has ended, to a
// file created before it starts, so that a path that cannot be written is
// refused before the run rather than after it.
type lateProfile struct {
	name string // "allocs": the allocations of the run; "mutex": its contention
	file *os.File
}

// createLateProfiles creates the files of --memprofile and --mutexprofile
// and, for the mutex profile, starts recording every contention.
func createLateProfiles(f *benchFlags) ([]lateProfile, error) {
	var late []lateProfile
	for _, p := range []struct{ name, path string }{{"allocs", f.memProf}, {"mutex", f.mutexProf}} {
		if p.path == "" {
			continue
		}
		file, err := os.Create(p.path)
		if err != nil {
			closeLateProfiles(late)
			return nil, cli.Failf("%s profile: %w", p.name, err)
		}
		late = append(late, lateProfile{p.name, file})
	}
	if f.mutexProf != "" {
		runtime.SetMutexProfileFraction(1)
	}
	return late, nil
}

// closeLateProfiles closes the files of late (again, once written: the
// second Close of each only returns an error, which is ignored).
func closeLateProfiles(late []lateProfile) {
	for _, p := range late {
		_ = p.file.Close()
	}
}

// startProfile starts a CPU profile written to path; stop ends it.
func startProfile(path string) (stop func(), err error) {
	return startToFile(path, pprof.StartCPUProfile, pprof.StopCPUProfile)
}

// startTrace starts a Go execution trace written to path; stop ends it.
func startTrace(path string) (stop func(), err error) {
	return startToFile(path, trace.Start, trace.Stop)
}

// startToFile creates path and runs start on it; stop runs end and
// closes the file.
func startToFile(path string, start func(io.Writer) error, end func()) (stop func(), err error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	if err := start(f); err != nil {
		_ = f.Close()
		return nil, err
	}
	return func() { end(); _ = f.Close() }, nil
}
