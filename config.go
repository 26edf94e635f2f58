package leasehold

import (
	"cmp"
	"fmt"
	"log/slog"
	"reflect"
	"slices"
	"time"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/statemachine"
)

// Defaults for Config. A zero field in Config takes its default.
const (
	DefaultQueue           = "default"
	DefaultLeaseTTL        = 30 * time.Second
	DefaultWatcherInterval = 30 * time.Second
	DefaultPollInterval    = 1 * time.Second
	DefaultShutdownTimeout = 30 * time.Second
	// DefaultMaxWorkers is the default number of jobs a queue runs at once
	// in one client. A claim waits for a commit (one WAL flush), so a
	// fetcher's throughput is at most the jobs in flight over the claim's
	// round trip (Little's law): 100 slots cap it near 20,000 jobs/s even
	// for no-op jobs, 500 let it reach what the database can do, and 1,000
	// let it do so in half the claims (commits) per job.
	DefaultMaxWorkers      = 1000
	DefaultMaxAttempts     = 20
	DefaultMaxPayloadBytes = 1 << 20
	// DefaultFetchBatch caps the jobs one claim statement leases.
	DefaultFetchBatch = 1000
	// DefaultCompleteBatch caps the outcomes one finish statement writes.
	DefaultCompleteBatch = 5000
	// DefaultCompleteLingerFrom is the size of a finish statement from
	// which, on a driver that implements driver.FinishLingerer (pgdriver),
	// the next one waits up to the driver's FinishLinger for
	// DefaultCompleteBatch outcomes: under load, about one finish statement
	// per FinishLinger (pgdriver: 20 ms); below it, each outcome is written
	// as soon as it comes.
	DefaultCompleteLingerFrom = 100
	// MaxMaxWorkers bounds QueueConfig.MaxWorkers.
	MaxMaxWorkers = 100_000
	// MinLeaseTTL is the shortest LeaseTTL a Config may set. A lease is
	// renewed every HeartbeatInterval (default LeaseTTL/3) and its handler
	// cancelled LeaseSafetyMargin (default LeaseTTL/6) before it could
	// expire, so a shorter TTL leaves a margin below a database commit or
	// a pause of the process, and leases are lost without any fault. It
	// is a floor, not advice: the command-line tool asks for 500 ms or
	// more, and a TTL of seconds (the default 30 s) rides out a slow
	// database.
	MinLeaseTTL = 100 * time.Millisecond
	// MinLeaseSafetyMargin is the shortest LeaseSafetyMargin a Config may
	// set. The watchdog wakes when a lease's safe window ends, but the Go
	// runtime wakes a sleeping goroutine on a grid of about a millisecond,
	// later on a loaded machine, and the handler needs time to see its
	// context end: a margin shorter than that cancels the handler after
	// another worker may have taken the job over. It is a floor, not
	// advice (the default, LeaseTTL/6, is 5 s for the default TTL).
	MinLeaseSafetyMargin = 10 * time.Millisecond
)

// ThroughputInterval is how often a client adds the attempts it ended to
// the database's per-minute totals (Client.Throughput), besides once when
// it stops.
const ThroughputInterval = 10 * time.Second

// Config configures a Client. Every field is optional except Driver; a
// zero value takes the documented default and a negative one is an error.
type Config struct {
	// Driver is the database: pgdriver or sqlitedriver. Required.
	Driver driver.Driver

	// Workers holds the handlers, one per kind. A client without workers
	// only inserts and operates on jobs (it runs no fetchers).
	Workers *Workers

	// Queues to work, each with its own concurrency. Default: the single
	// queue "default" with DefaultMaxWorkers.
	Queues map[string]QueueConfig

	// LeaseTTL is how long a claim or heartbeat holds a job (database
	// clock). Default 30 s; at least MinLeaseTTL.
	LeaseTTL time.Duration

	// HeartbeatInterval is how often the leases of running jobs are renewed,
	// all in one statement (one per 20,000 leases). Default LeaseTTL/3; at
	// most LeaseTTL/2.
	HeartbeatInterval time.Duration

	// LeaseSafetyMargin: a worker that has not renewed a lease for
	// LeaseTTL - LeaseSafetyMargin (its own monotonic clock, measured from
	// when the last successful claim or renewal was sent) cancels the
	// handler with ErrLeaseLost before anyone else can take the job over.
	// The margin must cover how late the worker's watchdog may wake (the
	// runtime's timer grid of about a millisecond, plus scheduling delay
	// and pauses on a busy machine) and the handler's time to see its
	// context end. Default LeaseTTL/6; at least MinLeaseSafetyMargin; it
	// must leave HeartbeatInterval below LeaseTTL - LeaseSafetyMargin.
	LeaseSafetyMargin time.Duration

	// WatcherInterval is how often the stuck watcher returns expired
	// leases to pending (or flags them stuck, sends them to reconciling,
	// fails or cancels them; see Client.RescueExpired). Default 30 s.
	// A client's watcher looks only at the queues in its Queues (the
	// queue "default" when none are configured), whose policy it knows:
	// a client for other work (periodic jobs only, another queue) never
	// requeues or fails the expired leases of a queue that flags or
	// reconciles them.
	WatcherInterval time.Duration

	// DisableWatcher turns the stuck watcher off in this client (for
	// example when `leasehold watch` runs it elsewhere). Every queue's
	// expired leases need a watcher with that queue's policy: a client
	// working the queue, or `leasehold watch` with its policy flags.
	// It leaves FinishedRetention on: `leasehold watch` deletes no
	// finished jobs.
	DisableWatcher bool

	// FinishedRetention, when positive, makes the client delete the
	// completed, failed and cancelled jobs (and their history) of its
	// own queues that finished longer ago than this, in batches, every
	// WatcherInterval, keeping the table small; with or without
	// DisableWatcher. Its own queues are those its watcher looks at: the
	// queues in Queues, the queue "default" when none are configured. It
	// deletes no other queue's finished jobs, which another service may
	// keep for their unique keys: set it in a client for each queue
	// whose jobs should go, or call PurgeFinished (`leasehold purge`),
	// which deletes those of every queue. Every client that sets it
	// deletes, which is safe: each batch is one delete of finished jobs.
	// Default 0: keep every job until PurgeFinished is called. A deleted
	// job no longer holds its unique key: a plain key (the default scope)
	// is free again once its job is purged, so an insert with that key
	// adds a new job; keep finished jobs as long as their keys must hold
	// (docs/unique.md).
	FinishedRetention time.Duration

	// PollInterval is how often the client asks the database which of its
	// queues have work, in one statement for all of them, and claims from
	// those: a job no wake-up hint announces (PollOnly, another process on
	// SQLite, a lost notification) is claimed within one PollInterval, and
	// idle queues cost one statement per interval per client, however
	// many there are. Default 1 s.
	PollInterval time.Duration

	// PollOnly disables LISTEN/NOTIFY wake-ups (for transaction-pooling
	// proxies); workers rely on polling alone.
	PollOnly bool

	// ShutdownTimeout is how long Stop lets running jobs finish before it
	// cancels them and releases their leases. Default 30 s.
	ShutdownTimeout time.Duration

	// DefaultMaxAttempts is the retry budget of jobs inserted without
	// InsertOpts.MaxAttempts. Default 20.
	DefaultMaxAttempts int

	// MaxPayloadBytes limits encoded job arguments, and a job's metadata
	// apart. Default 1 MiB.
	MaxPayloadBytes int

	// RetryPolicy chooses the delay before a failed job runs again.
	// Default DefaultRetryPolicy().
	RetryPolicy RetryPolicy

	// Owner names this worker instance in lease_owner: at most
	// MaxOwnerBytes of UTF-8 without control characters. Default
	// "host-pid-random". It is part of every fence, so no two running
	// clients may share one: two clients with the same Owner are told
	// apart by the attempt alone, and after a claim the database lost
	// (an asynchronous failover) both could hold the same token. A
	// configured name should keep a per-process part (a pod name and a
	// start time, say), so that no later process reuses it either: after
	// a claim whose reply was lost, a client releases the unrenewed
	// leases of its owner that no claim reply brought it.
	Owner string

	// Logger receives operational messages. Default slog.Default().
	Logger *slog.Logger

	// InsertMiddleware sees, and may change, every job before it is
	// inserted, in the inserting transaction; the first one is outermost.
	InsertMiddleware []InsertMiddleware

	// WorkMiddleware wraps every handler call with the job and its lease;
	// the first one is outermost.
	WorkMiddleware []WorkMiddleware

	// Periodic are jobs inserted on a schedule by this client (more can be
	// added with AddPeriodic). Each is checked by NewClient: a bad one is
	// an ErrInvalidConfig that also matches the periodic job's error.
	Periodic []PeriodicJob
}

// QueueConfig configures one queue of a Client.
type QueueConfig struct {
	// MaxWorkers is how many of the queue's jobs run at once in this
	// client. Default DefaultMaxWorkers (1,000). Handlers run on goroutines
	// that are kept between jobs: after a burst, up to the sum of the
	// queues' MaxWorkers of them wait idle until Stop.
	MaxWorkers int
	// FlagStuck makes expired leases in this queue go to the stuck state
	// for an operator to decide, instead of back to pending, even when the
	// expired attempt was the job's last (a failure would hide an effect
	// it may have had). New claims do not take over its expired leases
	// either. Every client that works the queue, and `leasehold watch`
	// (`--flag-stuck`) or `leasehold serve` if they run the watcher, must
	// set it: a client without it takes the expired leases over and runs
	// their jobs again, the blind retry FlagStuck is for avoiding. A job
	// whose cancel was requested is cancelled by the watcher, not flagged.
	FlagStuck bool
	// Reconcile, when set, makes expired leases in this queue go to the
	// reconciling state with a reconcile job (see ReconcilePolicy) instead
	// of back to pending: neither retried blindly nor only flagged. New
	// claims do not take over its expired leases either. Every client
	// that works the queue, and `leasehold watch` if it runs, must be
	// configured alike. It excludes FlagStuck.
	Reconcile *ReconcilePolicy
}

// DefaultReconcileQueue is the queue of reconcile jobs when
// ReconcilePolicy.Queue is empty.
const DefaultReconcileQueue = "reconcile"

// ReconcilePolicy says where the reconcile jobs of a queue configured
// with QueueConfig.Reconcile go. When a lease of the queue expires, the
// stuck watcher moves the job to StateReconciling and, in the same
// transaction, inserts one reconcile job (ReconcileArgs: the job's id,
// the expired attempt, its idempotency key) whose handler finds out what
// the attempt did and decides with ResolveReconcile. So does a job whose
// cancel was requested: the reconciler decides first, and a resolution
// that would run it again (retry, snooze) cancels it instead.
type ReconcilePolicy struct {
	// Queue is the reconcile jobs' queue. Default DefaultReconcileQueue.
	// It must not reconcile itself.
	Queue string
	// Kind is the reconcile jobs' kind: the kind of a worker registered
	// with ReconcileArgs, or of an args type of the same JSON shape.
	// Default ReconcileKind.
	Kind string
	// MaxAttempts is the reconcile jobs' retry budget. Default
	// Config.DefaultMaxAttempts.
	MaxAttempts int
	// Priority is the reconcile jobs' priority (lower runs first), in
	// 0..MaxPriority.
	Priority int
}

// withDefaults returns a copy of c with zero fields set to their defaults.
func (c Config) withDefaults() Config {
	c.LeaseTTL = cmp.Or(c.LeaseTTL, DefaultLeaseTTL)
	c.HeartbeatInterval = cmp.Or(c.HeartbeatInterval, c.LeaseTTL/3)
	c.LeaseSafetyMargin = cmp.Or(c.LeaseSafetyMargin, c.LeaseTTL/6)
	c.WatcherInterval = cmp.Or(c.WatcherInterval, DefaultWatcherInterval)
	c.PollInterval = cmp.Or(c.PollInterval, DefaultPollInterval)
	c.ShutdownTimeout = cmp.Or(c.ShutdownTimeout, DefaultShutdownTimeout)
	c.DefaultMaxAttempts = cmp.Or(c.DefaultMaxAttempts, DefaultMaxAttempts)
	c.MaxPayloadBytes = cmp.Or(c.MaxPayloadBytes, DefaultMaxPayloadBytes)
	if c.RetryPolicy == nil {
		c.RetryPolicy = DefaultRetryPolicy()
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	queues := make(map[string]QueueConfig, len(c.Queues))
	for name, q := range c.Queues {
		q.MaxWorkers = cmp.Or(q.MaxWorkers, DefaultMaxWorkers)
		queues[name] = q
	}
	if len(queues) == 0 {
		queues[DefaultQueue] = QueueConfig{MaxWorkers: DefaultMaxWorkers}
	}
	c.Queues = queues
	return c
}

// validate reports the first impossible setting of a defaulted config.
func (c Config) validate() error {
	if c.Driver == nil {
		return fmt.Errorf("%w: Driver is required", ErrInvalidConfig)
	}
	if err := c.validateDurations(); err != nil {
		return err
	}
	if c.FinishedRetention < 0 {
		return fmt.Errorf("%w: FinishedRetention must not be negative, got %v", ErrInvalidConfig, c.FinishedRetention)
	}
	if c.DefaultMaxAttempts < 1 || c.DefaultMaxAttempts > MaxMaxAttempts {
		return fmt.Errorf("%w: DefaultMaxAttempts must be in 1..%d, got %d", ErrInvalidConfig, MaxMaxAttempts, c.DefaultMaxAttempts)
	}
	if c.MaxPayloadBytes < 2 {
		return fmt.Errorf("%w: MaxPayloadBytes must be at least 2, got %d", ErrInvalidConfig, c.MaxPayloadBytes)
	}
	if err := validateOwner(c.Owner); err != nil {
		return err
	}
	if err := c.validateMiddleware(); err != nil {
		return err
	}
	return c.validateQueues()
}

// validateDurations checks the lease and loop durations: positive, a
// lease long enough for its renewals, loops no shorter than MinInterval.
func (c Config) validateDurations() error {
	// LeaseTTL first: HeartbeatInterval and LeaseSafetyMargin default to
	// fractions of it, which a TTL in nanoseconds (LeaseTTL: 5, meant as
	// seconds) makes zero, and the error must name the field that was set.
	if err := c.validateLeaseTTL(); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		d    time.Duration
	}{
		{"HeartbeatInterval", c.HeartbeatInterval},
		{"LeaseSafetyMargin", c.LeaseSafetyMargin}, {"WatcherInterval", c.WatcherInterval},
		{"PollInterval", c.PollInterval}, {"ShutdownTimeout", c.ShutdownTimeout},
	} {
		if f.d <= 0 {
			return fmt.Errorf("%w: %s must be positive, got %v", ErrInvalidConfig, f.name, f.d)
		}
	}
	if c.LeaseSafetyMargin < MinLeaseSafetyMargin {
		return fmt.Errorf("%w: LeaseSafetyMargin %v is below MinLeaseSafetyMargin %v: the watchdog could cancel a handler after its lease expired",
			ErrInvalidConfig, c.LeaseSafetyMargin, MinLeaseSafetyMargin)
	}
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"HeartbeatInterval", c.HeartbeatInterval}, {"WatcherInterval", c.WatcherInterval}, {"PollInterval", c.PollInterval}} {
		if f.d < MinInterval {
			return fmt.Errorf("%w: %s %v is below MinInterval %v: a loop that short would spin a core",
				ErrInvalidConfig, f.name, f.d, MinInterval)
		}
	}
	if c.HeartbeatInterval > c.LeaseTTL/2 {
		return fmt.Errorf("%w: HeartbeatInterval %v must be at most half of LeaseTTL %v (default TTL/3)",
			ErrInvalidConfig, c.HeartbeatInterval, c.LeaseTTL)
	}
	if c.HeartbeatInterval >= c.LeaseTTL-c.LeaseSafetyMargin {
		return fmt.Errorf("%w: HeartbeatInterval %v must be below LeaseTTL - LeaseSafetyMargin (%v - %v)",
			ErrInvalidConfig, c.HeartbeatInterval, c.LeaseTTL, c.LeaseSafetyMargin)
	}
	return nil
}

// validateLeaseTTL checks that LeaseTTL is positive and at least
// MinLeaseTTL.
func (c Config) validateLeaseTTL() error {
	if c.LeaseTTL <= 0 {
		return fmt.Errorf("%w: LeaseTTL must be positive, got %v", ErrInvalidConfig, c.LeaseTTL)
	}
	if c.LeaseTTL < MinLeaseTTL {
		return fmt.Errorf("%w: LeaseTTL %v is below MinLeaseTTL %v: heartbeats every TTL/3 and a safety margin of TTL/6 leave no time for a database round trip",
			ErrInvalidConfig, c.LeaseTTL, MinLeaseTTL)
	}
	return nil
}

// MinInterval is the shortest HeartbeatInterval, WatcherInterval and
// PollInterval accepted: each is the period of a loop.
const MinInterval = time.Millisecond

// validateMiddleware refuses a nil middleware, which would fail every
// insert or every job later, a nil func in an adapter
// (WorkMiddlewareFunc(nil)) included.
func (c Config) validateMiddleware() error {
	for i, m := range c.InsertMiddleware {
		if m == nil || nilFunc(m) {
			return fmt.Errorf("%w: InsertMiddleware[%d] is nil", ErrInvalidConfig, i)
		}
	}
	for i, m := range c.WorkMiddleware {
		if m == nil || nilFunc(m) {
			return fmt.Errorf("%w: WorkMiddleware[%d] is nil", ErrInvalidConfig, i)
		}
	}
	return nil
}

// nilFunc reports whether x holds a nil func: an adapter such as
// WorkFunc[T](nil) makes a non-nil interface that panics when called. A
// nil pointer is not refused: its methods may be nil-safe.
func nilFunc(x any) bool {
	v := reflect.ValueOf(x)
	return v.Kind() == reflect.Func && v.IsNil()
}

// MaxOwnerBytes bounds Config.Owner.
const MaxOwnerBytes = 200

// ValidateOwner checks that owner can be Config.Owner: at most
// MaxOwnerBytes of UTF-8 without control characters. It returns an
// *InvalidInputError matching ErrInvalidConfig.
func ValidateOwner(owner string) error {
	if !ownerOK(owner) {
		return invalid(ErrInvalidConfig, "owner", "%s: want at most %d bytes of UTF-8 without control characters",
			quoteInput(owner), MaxOwnerBytes)
	}
	return nil
}

// ownerOK reports whether owner is a usable Config.Owner (see
// validateOwner).
func ownerOK(owner string) bool {
	return len(owner) <= MaxOwnerBytes && textProblem(owner, true) == ""
}

// validateOwner checks a configured owner (empty: generated): it is
// written with every lease and printed in logs and tables, so it must be
// valid UTF-8 without control characters (a NUL byte would make
// PostgreSQL refuse every claim), at most MaxOwnerBytes.
func validateOwner(owner string) error {
	if !ownerOK(owner) {
		return fmt.Errorf("%w: Owner must be at most %d bytes of UTF-8 without control characters, got %s",
			ErrInvalidConfig, MaxOwnerBytes, quoteInput(owner))
	}
	return nil
}

func (c Config) validateQueues() error {
	for name, q := range c.Queues {
		if err := ValidateQueue(name); err != nil {
			return fmt.Errorf("%w: %w", ErrInvalidConfig, err)
		}
		if q.MaxWorkers < 1 || q.MaxWorkers > MaxMaxWorkers {
			return fmt.Errorf("%w: queue %s: MaxWorkers must be in 1..%d, got %d",
				ErrInvalidConfig, name, MaxMaxWorkers, q.MaxWorkers)
		}
		if err := c.validateReconcile(name, q); err != nil {
			return err
		}
	}
	return nil
}

// validateReconcile checks the reconcile policy of queue name, if any.
func (c Config) validateReconcile(name string, q QueueConfig) error {
	r := q.Reconcile
	if r == nil {
		return nil
	}
	if q.FlagStuck {
		return fmt.Errorf("%w: queue %s: FlagStuck and Reconcile exclude each other", ErrInvalidConfig, name)
	}
	t := c.reconcileTarget(r)
	if err := ValidateQueue(t.Queue); err != nil {
		return fmt.Errorf("%w: queue %s: Reconcile.Queue: %w", ErrInvalidConfig, name, err)
	}
	if err := ValidateKind(t.Kind); err != nil {
		return fmt.Errorf("%w: queue %s: Reconcile.Kind: %w", ErrInvalidConfig, name, err)
	}
	if rq, ok := c.Queues[t.Queue]; ok && rq.Reconcile != nil {
		return fmt.Errorf("%w: queue %s: its reconcile queue %s reconciles too", ErrInvalidConfig, name, t.Queue)
	}
	if t.MaxAttempts < 1 || t.MaxAttempts > MaxMaxAttempts {
		return fmt.Errorf("%w: queue %s: Reconcile.MaxAttempts must be in 0 (default)..%d, got %d",
			ErrInvalidConfig, name, MaxMaxAttempts, r.MaxAttempts)
	}
	if t.Priority < 0 || t.Priority > MaxPriority {
		return fmt.Errorf("%w: queue %s: Reconcile.Priority must be in 0..%d, got %d",
			ErrInvalidConfig, name, MaxPriority, r.Priority)
	}
	return nil
}

// reconcileTarget returns r with its defaults filled.
func (c Config) reconcileTarget(r *ReconcilePolicy) statemachine.ReconcileTarget {
	return statemachine.ReconcileTarget{
		Queue: cmp.Or(r.Queue, DefaultReconcileQueue), Kind: cmp.Or(r.Kind, ReconcileKind),
		MaxAttempts: cmp.Or(r.MaxAttempts, c.DefaultMaxAttempts), Priority: r.Priority,
	}
}

// reconcileQueues maps the queues configured with Reconcile to where
// their reconcile jobs go.
func (c Config) reconcileQueues() map[string]statemachine.ReconcileTarget {
	out := map[string]statemachine.ReconcileTarget{}
	for name, q := range c.Queues {
		if q.Reconcile != nil {
			out[name] = c.reconcileTarget(q.Reconcile)
		}
	}
	return out
}

// queueNames returns the configured queues' names, sorted.
func (c Config) queueNames() []string {
	qs := make([]string, 0, len(c.Queues))
	for name := range c.Queues {
		qs = append(qs, name)
	}
	slices.Sort(qs)
	return qs
}

// flagQueues returns the queues configured with FlagStuck, sorted.
func (c Config) flagQueues() []string {
	var qs []string
	for name, q := range c.Queues {
		if q.FlagStuck {
			qs = append(qs, name)
		}
	}
	slices.Sort(qs)
	return qs
}
