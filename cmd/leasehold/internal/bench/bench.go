// Package bench measures leasehold on a real database: drain throughput
// against worker count, the bare-SQL ceiling of the same work, pickup
// latency at a steady insert rate, bulk insert rate, the cost of leases
// held for a long time, and statements per job. It prints a table, and
// writes the figures as JSON and a PNG chart. Every measurement runs on a
// scratch database (a new PostgreSQL schema, or a new SQLite file), dropped
// afterwards. Figures are printed, never asserted: ratios are taken against
// baselines measured in the same run.
package bench

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
)

// Defaults of Options.
const (
	DefaultJobs           = 100_000
	DefaultRate           = 1000
	DefaultLatencyFor     = 5 * time.Second
	DefaultLeaseJobs      = 10_000
	DefaultLeaseTTL       = 6 * time.Second
	DefaultLeaseHold      = 10 * time.Second
	DefaultCeilingLoops   = 2
	DefaultCeilingBatch   = 500
	DefaultCeilingRounds  = 3
	DefaultMetricsRounds  = 3
	DefaultTraceSample    = 0.01
	DefaultPhaseTimeout   = 5 * time.Minute
	defaultInsertChunk    = 10_000
	completionPollEvery   = time.Millisecond
	drainProgressInterval = 5 * time.Second
)

// DefaultWorkers are the worker counts of the drain sweep; 1,000 is the
// library's default (leasehold.DefaultMaxWorkers).
var DefaultWorkers = []int{50, 100, 250, 500, 1000}

// Phases a run can select.
const (
	PhaseInsert  = "insert"
	PhaseDrain   = "drain"
	PhaseCeiling = "ceiling"
	PhaseLatency = "latency"
	PhaseLease   = "lease"
	PhaseIdle    = "idle"
	// PhaseSustained inserts and drains at a fixed rate for SustainFor;
	// being long, it runs only when asked for.
	PhaseSustained = "sustained"
)

// AllPhases lists every phase run by default, in run order.
var AllPhases = []string{PhaseInsert, PhaseDrain, PhaseCeiling, PhaseLatency, PhaseLease, PhaseIdle}

// KnownPhases lists every phase a run can select: AllPhases and
// PhaseSustained.
var KnownPhases = append(slices.Clone(AllPhases), PhaseSustained)

// Options configure a run. Exactly one of URL (PostgreSQL) and Path
// (SQLite) is set; zero fields take the defaults above.
type Options struct {
	URL  string // PostgreSQL URL
	Path string // SQLite file: scratch files go in its directory

	Phases  []string // default AllPhases
	Jobs    int      // jobs per drain, ceiling and insert measurement
	Workers []int    // drain sweep; the default worker count is always added
	// Metrics compares the drain with the default worker count with and
	// without Prometheus metrics: MetricsRounds pairs of drains after the
	// sweep's (Report.DrainMetrics).
	Metrics       bool
	MetricsRounds int
	// Tracing adds, with Metrics, drains with metrics and OpenTelemetry
	// tracing (contrib/otel on the SDK, a parent-based ratio sampler and a
	// batch span processor to an exporter that discards) to each round:
	// one sampling TraceSample of the traces, and one every span.
	Tracing bool
	// TraceSample is the sampler's ratio of the first traced drain, in
	// (0, 1]; 1 leaves only the drain that samples every span.
	TraceSample float64

	// RetryEvery makes each drain's handler fail every job whose id is a
	// multiple of it, with an error of its own, retried an hour later (0:
	// none): a drain with declined payments among the completed ones.
	RetryEvery int

	CeilingLoops int // concurrent bare-SQL loops
	CeilingBatch int // jobs per bare-SQL claim
	// CeilingRounds is how many rounds of one drain and one ceiling
	// compare the default worker count's drain with the ceiling.
	CeilingRounds int

	Rate       int           // pickup latency: jobs inserted per second
	LatencyFor time.Duration // pickup latency: how long to insert

	LeaseJobs int           // lease overhead: jobs in flight at once
	LeaseTTL  time.Duration // lease overhead: TTL (heartbeat every TTL/3)
	LeaseHold time.Duration // lease overhead: how long each job sleeps

	IdleQueues    int           // idle cost: queues of the idle client
	IdleFor       time.Duration // idle cost: how long statements are counted
	IdleRate      int           // idle cost: jobs inserted per second afterwards
	IdlePickupFor time.Duration // idle cost: how long to insert

	Timeout time.Duration // per measurement

	// The sustained phase: jobs inserted at SustainRate per second (in
	// small batches) for SustainFor and drained by a worker with default
	// settings whose FinishedRetention is SustainRetention, figures
	// reported per SustainWindow. With HoldFor set, one REPEATABLE READ
	// transaction is held open from HoldAt for HoldFor.
	SustainFor       time.Duration
	SustainRate      int
	SustainRetention time.Duration
	SustainWindow    time.Duration
	HoldAt, HoldFor  time.Duration

	// Progress receives a line per measurement; nil discards them.
	Progress io.Writer
	// Logger receives the library's warnings; nil discards them.
	Logger *slog.Logger
}

func (o Options) withDefaults() Options {
	if len(o.Phases) == 0 {
		o.Phases = AllPhases
	}
	o.Jobs = cmp.Or(o.Jobs, DefaultJobs)
	if len(o.Workers) == 0 {
		o.Workers = DefaultWorkers
	}
	if !slices.Contains(o.Workers, leasehold.DefaultMaxWorkers) {
		o.Workers = append(slices.Clone(o.Workers), leasehold.DefaultMaxWorkers)
	}
	o.Workers = slices.Compact(slices.Sorted(slices.Values(o.Workers)))
	o.CeilingLoops = cmp.Or(o.CeilingLoops, DefaultCeilingLoops)
	o.CeilingBatch = cmp.Or(o.CeilingBatch, DefaultCeilingBatch)
	o.CeilingRounds = cmp.Or(o.CeilingRounds, DefaultCeilingRounds)
	o.MetricsRounds = cmp.Or(o.MetricsRounds, DefaultMetricsRounds)
	o.TraceSample = cmp.Or(o.TraceSample, DefaultTraceSample)
	o.Rate = cmp.Or(o.Rate, DefaultRate)
	o.LatencyFor = cmp.Or(o.LatencyFor, DefaultLatencyFor)
	o.LeaseJobs = cmp.Or(o.LeaseJobs, DefaultLeaseJobs)
	o.LeaseTTL = cmp.Or(o.LeaseTTL, DefaultLeaseTTL)
	o.LeaseHold = cmp.Or(o.LeaseHold, DefaultLeaseHold)
	o.IdleQueues = cmp.Or(o.IdleQueues, DefaultIdleQueues)
	o.IdleFor = cmp.Or(o.IdleFor, DefaultIdleFor)
	o.IdleRate = cmp.Or(o.IdleRate, DefaultIdleRate)
	o.IdlePickupFor = cmp.Or(o.IdlePickupFor, DefaultIdlePickupFor)
	o.Timeout = cmp.Or(o.Timeout, DefaultPhaseTimeout)
	o.SustainFor = cmp.Or(o.SustainFor, DefaultSustainFor)
	o.SustainRate = cmp.Or(o.SustainRate, DefaultSustainRate)
	o.SustainRetention = cmp.Or(o.SustainRetention, DefaultSustainRetention)
	o.SustainWindow = cmp.Or(o.SustainWindow, DefaultSustainWindow)
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o
}

func (o Options) validate() error {
	if (o.URL == "") == (o.Path == "") {
		return fmt.Errorf("bench: set exactly one of URL and Path")
	}
	for _, p := range o.Phases {
		if !slices.Contains(KnownPhases, p) {
			return fmt.Errorf("bench: unknown phase %q (want %v)", p, KnownPhases)
		}
	}
	if slices.Contains(o.Phases, PhaseSustained) {
		if err := o.validateSustained(); err != nil {
			return err
		}
	} else if o.HoldFor > 0 {
		return fmt.Errorf("bench: a held transaction needs the %s phase", PhaseSustained)
	}
	for _, w := range o.Workers {
		if w < 1 {
			return fmt.Errorf("bench: worker count %d must be positive", w)
		}
	}
	for _, c := range []struct {
		flag string
		n    int
	}{{"jobs", o.Jobs}, {"rate", o.Rate}, {"lease-jobs", o.LeaseJobs}, {"ceiling-loops", o.CeilingLoops},
		{"ceiling-batch", o.CeilingBatch}, {"ceiling-rounds", o.CeilingRounds}, {"metrics-rounds", o.MetricsRounds}, {"idle-queues", o.IdleQueues},
		{"idle-rate", o.IdleRate}} {
		if c.n < 1 {
			return fmt.Errorf("bench: --%s %d must be positive", c.flag, c.n)
		}
	}
	if o.RetryEvery < 0 {
		return fmt.Errorf("bench: --retry-every %d must not be negative", o.RetryEvery)
	}
	if !(o.TraceSample > 0 && o.TraceSample <= 1) {
		return fmt.Errorf("bench: trace sample %g must be in (0, 1]", o.TraceSample)
	}
	if o.LeaseHold <= o.LeaseTTL/3 {
		return fmt.Errorf("bench: lease hold %v must outlast a heartbeat interval (TTL/3 = %v)", o.LeaseHold, o.LeaseTTL/3)
	}
	return nil
}

// bench is one run.
type bench struct {
	opts        Options
	stats       *pgStats // nil when statements are counted from driver calls
	rep         *Report
	metricsRuns []*drainMetrics // the drains with metrics, for their totals
}

func (b *bench) postgres() bool { return b.opts.URL != "" }

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(b.opts.Progress, format+"\n", args...)
}

func (b *bench) want(phase string) bool { return slices.Contains(b.opts.Phases, phase) }

// Run measures what opts selects and returns the report.
func Run(ctx context.Context, opts Options) (*Report, error) {
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, cli.UsageError(err)
	}
	b := &bench{opts: opts, rep: &Report{Started: time.Now().UTC(), Jobs: opts.Jobs, RetryEvery: opts.RetryEvery}}
	if err := b.describe(ctx); err != nil {
		return nil, err
	}
	if b.stats != nil {
		defer b.stats.close()
	}
	steps := []struct {
		phase string
		run   func(context.Context) error
	}{
		{PhaseInsert, b.runInsert}, {PhaseCeiling, b.runCeiling}, {PhaseDrain, b.runDrain},
		{PhaseLatency, b.runLatency}, {PhaseLease, b.runLease}, {PhaseIdle, b.runIdle},
		{PhaseSustained, b.runSustained},
	}
	for _, s := range steps {
		if !b.want(s.phase) {
			continue
		}
		if err := s.run(ctx); err != nil {
			return b.rep, fmt.Errorf("bench: %s: %w", s.phase, err)
		}
	}
	b.rep.finish()
	b.rep.Seconds = time.Since(b.rep.Started).Seconds()
	return b.rep, nil
}
