package leasehold

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/engine"
	"github.com/leasehold/leasehold/internal/maintenance"
	"github.com/leasehold/leasehold/internal/service"
	"github.com/leasehold/leasehold/internal/statemachine"
)

// Client inserts jobs, runs workers under leases, and offers the operator
// API. It is safe for concurrent use. Create it with NewClient, then Start
// it to run workers; Stop shuts it down gracefully.
type Client struct {
	cfg    Config
	driver driver.Driver
	owner  string
	events eventBus
	clock  *engine.Clock
	window *engine.Window
	leases *engine.Leases
	// rescuer runs the stuck watcher's passes, for the watcher service
	// and for RescueExpired.
	rescuer *maintenance.Rescuer
	// enqueuer inserts the periodic jobs' slots (Config.Periodic,
	// AddPeriodic).
	enqueuer *maintenance.Enqueuer
	// reconciler reports whether a job row is that of a reconcile job:
	// by its kind, or by the spawned shape of its key and args when this
	// client lacks the policy that names its kind
	// (statemachine.Reconciler).
	reconciler func(*JobRow) bool
	// resolutions are the running reconcile jobs' resolutions made in
	// callers' transactions, reported once their handlers return.
	resolutions txResolutions

	mu    sync.Mutex
	state clientState
	// producer claims jobs; set by Start when Workers has handlers (read
	// by wake without c.mu).
	producer atomic.Pointer[engine.Producer]
	executor *engine.Executor
	// services are the background parts, in the order Stop stops them.
	services []service.Service
	// jobBase is the parent of every handler's context: it carries the
	// client for ClientFromContext.
	jobBase context.Context

	// cancelStart ends a Start still reading the schema version when Stop
	// is called (cause ErrClientStopped).
	cancelStart context.CancelCauseFunc
	// stopped is closed once Stop has finished (see Stopped).
	stopped chan struct{}
}

type clientState int

const (
	stateNew      clientState = iota
	stateStarting             // Start is reading the schema version
	stateRunning
	stateStopped
)

// NewClient validates cfg (after filling defaults) and returns a client.
// It does not touch the database; call Migrate once before first use.
func NewClient(cfg Config) (*Client, error) {
	cfg = cfg.withDefaults()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	owner := cfg.Owner
	if owner == "" {
		var err error
		if owner, err = newOwnerID(); err != nil {
			return nil, err
		}
	}
	c := &Client{
		cfg:     cfg,
		driver:  cfg.Driver,
		owner:   owner,
		clock:   engine.NewClock(),
		leases:  engine.NewLeases(),
		stopped: make(chan struct{}),
	}
	c.events.init()
	c.reconciler = statemachine.Reconciler(cfg.reconcileQueues())
	c.window = &engine.Window{TTL: cfg.LeaseTTL, Margin: cfg.LeaseSafetyMargin, Clock: c.clock}
	c.jobBase = context.WithValue(context.Background(), clientKey{}, c)
	c.rescuer = maintenance.NewRescuer(maintenance.RescuerConfig{
		Driver: cfg.Driver, FlagQueues: cfg.flagQueues(), Reconcile: cfg.reconcileQueues(),
		Queues: cfg.queueNames(), Owner: owner, Held: c.leases.Held,
		Interval: cfg.WatcherInterval, Emit: c.events.emit, Logger: cfg.Logger,
	})
	c.enqueuer = maintenance.NewEnqueuer(maintenance.EnqueuerConfig{Driver: cfg.Driver, Logger: cfg.Logger})
	if err := c.addConfigPeriodic(); err != nil {
		return nil, err
	}
	return c, nil
}

// addConfigPeriodic adds the periodic jobs of the config.
func (c *Client) addConfigPeriodic() error {
	for _, job := range c.cfg.Periodic {
		if err := c.AddPeriodic(job); err != nil {
			return fmt.Errorf("%w: Periodic: %w", ErrInvalidConfig, err)
		}
	}
	return nil
}

// newOwnerID names a worker instance: host, pid and a random suffix.
func newOwnerID() (string, error) {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("leasehold: owner id: %w", err)
	}
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:])), nil
}

// Owner returns the worker-instance id this client writes to lease_owner.
func (c *Client) Owner() string { return c.owner }

// Driver returns the client's driver.
func (c *Client) Driver() driver.Driver { return c.driver }

// Queues returns the names of the queues the client is configured to
// work (Config.Queues, or DefaultQueue when it names none), sorted. The
// client claims from them once it has workers and has started.
func (c *Client) Queues() []string {
	return slices.Sorted(maps.Keys(c.cfg.Queues))
}

// Works reports whether the client works its Queues: whether it has
// workers (a handler in Config.Workers), so that once started it claims
// their jobs. A client without workers (one that only inserts jobs, or
// an operator's) works no queue, though Queues names DefaultQueue for
// it too. A worker added to Config.Workers before Start counts from
// then on; Start freezes the answer, as it does the workers.
func (c *Client) Works() bool { return len(c.cfg.Workers.Kinds()) > 0 }

// Migrate applies the driver's schema migrations. It is idempotent. It
// refuses (ErrSchemaTooNew) a database migrated by a newer leasehold; use
// Driver().Migrate to learn the versions before and after.
func (c *Client) Migrate(ctx context.Context) error {
	_, err := c.driver.Migrate(ctx)
	return err
}

// Start launches the fetchers (one per queue, when Workers has handlers),
// the heartbeater, the completer, the stuck watcher, the periodic jobs'
// enqueuer (Config.Periodic, AddPeriodic) and, when the driver
// supports it and PollOnly is off, the LISTEN/NOTIFY listener. Background
// work runs until Stop; ctx only bounds Start itself, which reads the
// database's schema version: when ctx is done first, Start returns an error
// wrapping ctx's error and the client is left as it was, ready for another
// Start. A Stop called meanwhile ends the wait, and Start returns
// ErrClientStopped. Starting twice returns ErrClientStarted; starting after
// Stop returns ErrClientStopped. Start freezes Config.Workers: AddWorker on it returns
// ErrWorkersFrozen from then on. Start refuses a schema of another version
// (SchemaVersionError); a client that is never started checks nothing by
// itself: see CheckSchema.
func (c *Client) Start(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("leasehold: start: %w", err)
	}
	ctx, err := c.beginStart(ctx)
	if err != nil {
		return err
	}
	if err := c.checkSchema(ctx); err != nil {
		return c.abortStart(ctx, err)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cancelStart(nil)
	if c.state == stateStopped {
		return ErrClientStopped // Stop came while the schema was read
	}
	c.launch()
	return nil
}

// beginStart moves a new client to stateStarting and returns ctx, which a
// Stop from now on cancels.
func (c *Client) beginStart(ctx context.Context) (context.Context, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch c.state {
	case stateStarting, stateRunning:
		return nil, ErrClientStarted
	case stateStopped:
		return nil, ErrClientStopped
	}
	c.state = stateStarting
	ctx, c.cancelStart = context.WithCancelCause(ctx)
	return ctx, nil
}

// abortStart puts a client whose Start failed with err back to stateNew,
// unless Stop came meanwhile, and returns the error for Start to return:
// one wrapping ctx's error when ctx ended the schema read.
func (c *Client) abortStart(ctx context.Context, err error) error {
	cause := context.Cause(ctx) // read before cancelStart sets one
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cancelStart(nil)
	if c.state == stateStopped {
		return ErrClientStopped
	}
	c.state = stateNew
	switch {
	case cause == nil:
		return err
	case errors.Is(err, cause):
		return fmt.Errorf("leasehold: start: %w", err)
	default:
		return fmt.Errorf("leasehold: start: %w (%w)", cause, err)
	}
}

// launch builds and starts every background part of a client that passed
// its schema check, from the one list Stop also uses. c.mu is held.
func (c *Client) launch() {
	kinds := c.cfg.Workers.freeze() // AddWorker refuses from now on
	c.state = stateRunning
	c.services = c.buildServices(kinds)
	for _, s := range c.enqueuer.Schedules() {
		c.warnUnworked(s)
	}
	c.warnUnreconciled(kinds)
	// Start in reverse stop order: what others depend on runs first.
	for i := len(c.services) - 1; i >= 0; i-- {
		_ = c.services[i].Start(context.Background()) // new services: cannot fail
	}
}

// warnUnreconciled logs a warning for each queue whose expired leases
// this client, which works queues, sends to reconciliation, when it does
// not run their reconcile jobs itself (their queue is not in
// Config.Queues, or no worker is registered for their kind): those jobs,
// and the payments they would decide, wait for another process, which
// may be intended, so it is not refused.
func (c *Client) warnUnreconciled(kinds []string) {
	if c.producer.Load() == nil {
		return
	}
	for name, t := range c.cfg.reconcileQueues() {
		_, works := c.cfg.Queues[t.Queue]
		if works && slices.Contains(kinds, t.Kind) {
			continue
		}
		c.cfg.Logger.Warn("leasehold: queue reconciles expired leases with reconcile jobs this client does not run: "+
			"its reconciling jobs wait until a process works their queue with a worker for their kind",
			"queue", name, "reconcile_queue", t.Queue, "reconcile_kind", t.Kind, "client_queues", c.Queues())
	}
}

// warnUnworked logs a warning when periodic job s inserts into a queue
// this running client, which works queues, does not claim from (not in
// Config.Queues): its jobs wait for another process that works the
// queue, which may be intended, so it is not refused. A client with no
// workers only inserts, as its periodic jobs may be meant to, and is not
// warned. c.mu is held.
func (c *Client) warnUnworked(s *maintenance.Schedule) {
	if _, ok := c.cfg.Queues[s.Queue]; ok || c.producer.Load() == nil {
		return
	}
	c.cfg.Logger.Warn("leasehold: periodic job inserts into a queue this client does not work: its jobs wait until another process works it",
		"periodic", s.Name, "queue", s.Queue, "kind", s.Kind, "client_queues", c.Queues())
}

// buildServices returns the client's background parts in the order Stop
// stops them: the maintenance services (the periodic enqueuer, the stuck
// watcher, retention) and the producer first (nothing
// new is claimed), then the executor (handlers finish or are released),
// the completer (every outcome and release is written), the throughput
// recorder (its last flush counts those outcomes) and last the
// heartbeater (the leases waiting for the completer stay renewed).
func (c *Client) buildServices(kinds []string) []service.Service {
	cfg := &c.cfg
	log := cfg.Logger
	completer := engine.NewCompleter(engine.CompleterConfig{
		Finisher: c.driver, Leases: c.leases, Window: c.window,
		Batch: DefaultCompleteBatch, Linger: driver.FinishLingerOf(c.driver), LingerFrom: DefaultCompleteLingerFrom,
		Refused: driver.RefusedOf(c.driver), Ended: driver.EndedReaderOf(c.driver), Emit: c.events.emit, Logger: log,
	})
	c.executor = engine.NewExecutor(engine.ExecutorConfig{
		Owner: c.owner, Base: c.jobBase, Run: c.runHandler, Classify: c.classify, GiveUp: c.giveUp,
		Leases: c.leases, Window: c.window, Completer: completer, Emit: c.events.emit, Logger: log,
	})
	heartbeater := engine.NewHeartbeater(engine.HeartbeaterConfig{
		Renewer: c.driver, Leases: c.leases, Window: c.window, Owner: c.owner,
		Interval: cfg.HeartbeatInterval, Emit: c.events.emit, Logger: log,
	})
	svcs := []service.Service{c.enqueuer}
	if !cfg.DisableWatcher {
		svcs = append(svcs, c.rescuer)
	}
	// Retention runs apart from the watcher: `leasehold watch`, which
	// DisableWatcher defers to, deletes no finished jobs.
	if cfg.FinishedRetention > 0 {
		svcs = append(svcs, maintenance.NewRetainer(c.driver, cfg.queueNames(), cfg.FinishedRetention, cfg.WatcherInterval, log))
	}
	if len(kinds) > 0 {
		p := engine.NewProducer(c.producerConfig(kinds))
		c.producer.Store(p)
		svcs = append(svcs, p)
	}
	recorder := maintenance.NewRecorder(c.driver, &c.events.throughput, ThroughputInterval, log)
	recorder.FinalBy = completer.ArmRelease // the last counts share the last outcomes' budget
	return append(svcs, c.executor, completer, recorder, heartbeater)
}

// producerConfig configures the producer to claim kinds.
func (c *Client) producerConfig(kinds []string) engine.ProducerConfig {
	queues := make(map[string]engine.QueueConfig, len(c.cfg.Queues))
	for name, q := range c.cfg.Queues {
		queues[name] = engine.QueueConfig{MaxWorkers: q.MaxWorkers, TakeOver: !q.FlagStuck && q.Reconcile == nil}
	}
	pc := engine.ProducerConfig{
		Claimer: c.driver, Queues: queues, Kinds: kinds, Owner: c.owner,
		TTL: c.cfg.LeaseTTL, PollInterval: c.cfg.PollInterval, FetchBatch: DefaultFetchBatch,
		Executor: c.executor, Clock: c.clock, Orphans: c.driver, Emit: c.events.emit, Logger: c.cfg.Logger,
	}
	if n, ok := c.driver.(driver.Notifier); ok && !c.cfg.PollOnly {
		pc.Notifier = n
	}
	return pc
}

// wake pokes the producer's loop for queue, if this client works it.
func (c *Client) wake(queue string) {
	if p := c.producer.Load(); p != nil {
		p.Wake(queue)
	}
}
