package chaos

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/fleet"
)

// Defaults of Options.
const (
	DefaultWorkers         = 4
	DefaultJobs            = 5000
	DefaultConcurrency     = 8
	DefaultTTL             = 2 * time.Second
	DefaultWatcherInterval = 500 * time.Millisecond
	DefaultPollInterval    = 100 * time.Millisecond
	DefaultKillEvery       = 2 * time.Second
	DefaultFreezeEvery     = 6 * time.Second
	DefaultLatency         = 10 * time.Millisecond
	DefaultStallProb       = 0.01
	DefaultTimeout         = 10 * time.Minute
	// DefaultReportEvery is how often workers report their counters.
	DefaultReportEvery = 100 * time.Millisecond
	// recoveryTimeout bounds the wait for workers to reach the database
	// again after a restart or a terminated session (plus the TTL).
	recoveryTimeout = 30 * time.Second
)

// Options configure a chaos run. Zero fields take the defaults.
type Options struct {
	// Target is the database: a PostgreSQL URL (the run gets a schema of
	// its own in that database) or a new SQLite file.
	Target cli.Target
	// Executable is the leasehold binary that runs the workers
	// (`leasehold chaos worker`).
	Executable string
	Workers    int // worker processes (K)
	Jobs       int // payment jobs (N)
	// Concurrency is how many jobs each worker runs at once.
	Concurrency     int
	TTL             time.Duration // lease TTL of the workers
	WatcherInterval time.Duration // stuck watcher period of the workers
	PollInterval    time.Duration // poll period of the workers
	// KillEvery is the period of SIGKILLs; a negative value disables them.
	KillEvery time.Duration
	// FreezeEvery is the period of freezes (negative: none); FreezeFor how
	// long a worker stays frozen, default 2 x TTL + WatcherInterval.
	FreezeEvery, FreezeFor time.Duration
	// PGRestarts is how many times PostgreSQL is restarted (spread over the
	// run by progress); it needs PGData.
	PGRestarts int
	// PGTerminateEvery is the period of pg_terminate_backend of one
	// worker's sessions; 0 disables it.
	PGTerminateEvery time.Duration
	// PGData is the data directory of the server to restart; PGCtl its
	// pg_ctl (default: found on the PATH or in /usr/lib/postgresql); PGLog
	// receives the restarted server's log (default: discarded).
	PGData, PGCtl, PGLog string
	// Latency is the provider's mean response time (uniform from half to
	// one and a half times it).
	Latency time.Duration
	// StallProb is the share of charges that stall for StallFor (default
	// 1.5 x TTL, kept alive by heartbeats); negative for none.
	StallProb float64
	StallFor  time.Duration
	// Timeout bounds the run; jobs not finished by then fail the check.
	Timeout time.Duration
	// Keep keeps the run's schema or SQLite file even when every check
	// passes (it is always kept when one fails).
	Keep bool
	// NetFaultEvery is the period of the network faults (0: none): for
	// NetFaultFor (default 2 x TTL + WatcherInterval, more than the TTL)
	// the TCP proxy between NetWorkers of the workers (default half,
	// rounded up, and never all) and the database cuts, delays replies by
	// NetDelay (default 1.5 x TTL) or stalls, in turn over the kinds of
	// NetFaults (default "partition,delay,stall"). PostgreSQL only.
	NetFaultEvery, NetFaultFor, NetDelay time.Duration
	NetWorkers                           int
	NetFaults                            string
	// NetMode says where the proxy runs: NetModeNamespaces (a process of
	// its own in a network namespace, the proxied workers in another, and
	// a PostgreSQL server of the run's own on the bridge, on port NetPort,
	// default 5446, in place of Target), NetModeLoopback (in the harness,
	// on loopback, in front of Target) or NetModeAuto (the default): the
	// first when the harness runs as root and namespaces are available.
	NetMode string
	NetPort int
	// Failover, "sync" or "async", makes the run start a primary and a
	// streaming standby of its own (in FailoverDir, default a temporary
	// directory; sockets only, named by PrimaryPort and StandbyPort,
	// default 5444 and 5445), SIGKILL the primary once FailoverAt of the
	// jobs completed (default 0.4) and promote the standby. It replaces
	// Target.
	Failover                 string
	FailoverDir              string
	FailoverAt               float64
	PrimaryPort, StandbyPort int
	// StandbyDelay delays the replication stream to the standby (through
	// a TCP proxy, cut when the primary dies), as for a distant standby.
	StandbyDelay time.Duration
	// Seed makes the fault schedule's choices reproducible; 0 picks one.
	Seed uint64
	// Out receives the fault schedule and progress, one timestamped line
	// each.
	Out io.Writer
}

func (o Options) withDefaults() Options {
	o.Workers = cmp.Or(o.Workers, DefaultWorkers)
	o.Jobs = cmp.Or(o.Jobs, DefaultJobs)
	o.Concurrency = cmp.Or(o.Concurrency, DefaultConcurrency)
	o.TTL = cmp.Or(o.TTL, DefaultTTL)
	o.WatcherInterval = cmp.Or(o.WatcherInterval, DefaultWatcherInterval)
	o.PollInterval = cmp.Or(o.PollInterval, DefaultPollInterval)
	o.KillEvery = cmp.Or(o.KillEvery, DefaultKillEvery)
	o.FreezeEvery = cmp.Or(o.FreezeEvery, DefaultFreezeEvery)
	o.FreezeFor = cmp.Or(o.FreezeFor, 2*o.TTL+o.WatcherInterval)
	o.Latency = cmp.Or(o.Latency, DefaultLatency)
	o.StallFor = cmp.Or(o.StallFor, o.TTL*3/2)
	o.Timeout = cmp.Or(o.Timeout, DefaultTimeout)
	o.StallProb = cmp.Or(o.StallProb, DefaultStallProb)
	if o.Out == nil {
		o.Out = io.Discard
	}
	o.NetFaultFor = cmp.Or(o.NetFaultFor, 2*o.TTL+o.WatcherInterval)
	o.NetDelay = cmp.Or(o.NetDelay, o.TTL*3/2)
	o.NetFaults = cmp.Or(o.NetFaults, "partition,delay,stall")
	o.FailoverAt = cmp.Or(o.FailoverAt, 0.4)
	o.PrimaryPort = cmp.Or(o.PrimaryPort, 5444)
	o.StandbyPort = cmp.Or(o.StandbyPort, 5445)
	if o.NetFaultEvery > 0 {
		o.NetWorkers = cmp.Or(o.NetWorkers, (o.Workers+1)/2)
	}
	o.NetMode = cmp.Or(o.NetMode, NetModeAuto)
	o.NetPort = cmp.Or(o.NetPort, DefaultNetPort)
	return o
}

// validate reports the first setting the harness cannot run with.
func (o Options) validate() error {
	switch {
	case !fleet.CanFreeze:
		return errors.New("chaos: the harness needs a Unix system (it freezes workers with SIGSTOP)")
	case o.Executable == "":
		return errors.New("chaos: no executable for the workers")
	case o.Workers < 2 || o.Workers > 64:
		return cli.Usagef("--workers %d is out of range 2..64", o.Workers)
	case o.Jobs < 1 || o.Jobs > 10_000_000:
		return cli.Usagef("--jobs %d is out of range 1..10000000", o.Jobs)
	case o.Concurrency < 1 || o.Concurrency > 1000:
		return cli.Usagef("--concurrency %d is out of range 1..1000", o.Concurrency)
	case o.FreezeEvery > 0 && o.FreezeFor <= o.TTL:
		return cli.Usagef("--freeze-for %s must exceed the lease TTL %s: a freeze must outlive the lease",
			cli.FormatDuration(o.FreezeFor), cli.FormatDuration(o.TTL))
	case o.FreezeEvery > 0 && o.FreezeEvery <= o.FreezeFor:
		return cli.Usagef("--freeze-every %s must exceed --freeze-for %s (one freeze at a time)",
			cli.FormatDuration(o.FreezeEvery), cli.FormatDuration(o.FreezeFor))
	case o.StallProb > 1:
		return cli.Usagef("--stall-prob %g is above 1", o.StallProb)
	case o.PGRestarts < 0 || o.PGRestarts > 100:
		return cli.Usagef("--pg-restarts %d is out of range 0..100", o.PGRestarts)
	}
	if err := o.validateNet(); err != nil {
		return err
	}
	if !validFailover(o.Failover) {
		return cli.Usagef("--failover %q: want sync or async", o.Failover)
	}
	if o.Failover != "" {
		if o.FailoverAt <= 0 || o.FailoverAt >= 1 {
			return cli.Usagef("--failover-at %g is out of range (0, 1)", o.FailoverAt)
		}
		return failoverUsage(o)
	}
	if o.netNamespaces() {
		return nil // the run starts its own PostgreSQL server, and restarts it
	}
	if o.Target.Dialect != cli.Postgres {
		if o.PGRestarts > 0 || o.PGTerminateEvery > 0 || o.NetFaultEvery > 0 {
			return cli.Usagef("--pg-restarts, --pg-terminate-every and --net-fault-every need a PostgreSQL --db (--net-fault-every as root: a server of its own, see --net-mode)")
		}
		return nil
	}
	if o.PGRestarts > 0 && o.PGData == "" {
		return cli.Usagef("--pg-restarts needs --pgdata: the data directory of the server to restart")
	}
	return nil
}

// reclaimSlack is the least time the statements of a reclaim may take
// once it is due: the producer's probe, which finds the queue with work,
// then the claim, which on SQLite waits for the one write lock among
// every worker's writes. With 100 ms, for the claim alone, a loaded
// machine failed the bound by a few tens of milliseconds. The slack used
// is the statements' measured time when that is more (harness.reclaimSlack).
const reclaimSlack = 300 * time.Millisecond

// reclaimTimers is how long a dead worker's lease may take to be claimed
// again, but for its statements: the lease runs out, then the watcher or a
// poll takes it.
func (o Options) reclaimTimers() time.Duration {
	return o.TTL + o.WatcherInterval + o.PollInterval
}

// validateNet checks the network fault settings.
func (o Options) validateNet() error {
	switch o.NetMode {
	case NetModeAuto, NetModeNamespaces, NetModeLoopback:
	default:
		return cli.Usagef("--net-mode %q: want %s, %s or %s", o.NetMode, NetModeAuto, NetModeNamespaces, NetModeLoopback)
	}
	if o.NetFaultEvery <= 0 {
		return nil
	}
	kinds, err := parseNetFaults(o.NetFaults)
	if err != nil {
		return err
	}
	switch {
	case o.NetPort < 1 || o.NetPort > 65535:
		return cli.Usagef("--net-port %d is out of range 1..65535", o.NetPort)
	case slices.Contains(kinds, outageDelay) && o.NetDelay <= o.TTL:
		// The delay fault is a heartbeat applied whose answer comes too
		// late: within the TTL, the worker hears it in time and the
		// fault tests nothing the lease contract covers.
		return cli.Usagef("--net-delay %s must exceed the lease TTL %s: a delayed heartbeat answer must come too late",
			cli.FormatDuration(o.NetDelay), cli.FormatDuration(o.TTL))
	case o.NetFaultFor <= o.TTL:
		return cli.Usagef("--net-fault-for %s must exceed the lease TTL %s", cli.FormatDuration(o.NetFaultFor), cli.FormatDuration(o.TTL))
	case o.NetFaultEvery <= o.NetFaultFor:
		return cli.Usagef("--net-fault-every %s must exceed --net-fault-for %s (one fault at a time)",
			cli.FormatDuration(o.NetFaultEvery), cli.FormatDuration(o.NetFaultFor))
	case o.NetWorkers < 1 || o.NetWorkers >= o.Workers:
		return cli.Usagef("--net-workers %d is out of range 1..%d: some workers must keep the database", o.NetWorkers, o.Workers-1)
	}
	return nil
}

func (o Options) describe() string {
	s := fmt.Sprintf("%d jobs, %d workers x %d, lease TTL %s, watcher %s, poll %s", o.Jobs, o.Workers, o.Concurrency,
		cli.FormatDuration(o.TTL), cli.FormatDuration(o.WatcherInterval), cli.FormatDuration(o.PollInterval))
	if o.KillEvery > 0 {
		s += ", SIGKILL every " + cli.FormatDuration(o.KillEvery)
	}
	if o.FreezeEvery > 0 {
		s += fmt.Sprintf(", SIGSTOP every %s for %s", cli.FormatDuration(o.FreezeEvery), cli.FormatDuration(o.FreezeFor))
	}
	if o.PGRestarts > 0 {
		s += fmt.Sprintf(", %d PostgreSQL restarts", o.PGRestarts)
	}
	if o.PGTerminateEvery > 0 {
		s += ", pg_terminate_backend every " + cli.FormatDuration(o.PGTerminateEvery)
	}
	s += o.describeFailover()
	if o.NetFaultEvery > 0 {
		s += fmt.Sprintf(", network faults (%s) every %s for %s on %d workers, proxy %s", o.NetFaults,
			cli.FormatDuration(o.NetFaultEvery), cli.FormatDuration(o.NetFaultFor), o.NetWorkers, netModeDescription(o.NetMode))
	}
	return s
}
