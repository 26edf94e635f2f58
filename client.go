package leasehold

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/leasehold/leasehold/driver"
)

// Client inserts jobs, runs workers under leases, and offers the operator
// API. It is safe for concurrent use. Create it with NewClient, then Start
// it to run workers; Stop shuts it down gracefully.
type Client struct {
	cfg    Config
	driver driver.Driver
	owner  string
	stats  stats
	epoch  time.Time

	mu       sync.Mutex
	state    clientState
	kinds    []string // kinds with a handler, claimed by the fetchers
	fetchers map[string]*fetcher
	running  map[driver.LeaseRef]*runningJob
	cancel   context.CancelFunc // stops fetchers, listener, watcher
	bgWG     sync.WaitGroup     // fetchers, listener, watcher
	jobsWG   sync.WaitGroup     // running handlers
	hb       *heartbeater
	comp     *completer
	pool     *workerPool[*runningJob] // goroutines that run handlers
	// jobBase is the parent of every handler's context: it carries the
	// client for ClientFromContext.
	jobBase context.Context

	// claimCtx bounds claim statements, which Stop's cancel does not
	// reach (a committed claim must be seen); Stop cancels it with
	// abortClaims when a claim outlasts ShutdownTimeout.
	claimCtx    context.Context
	abortClaims context.CancelFunc

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
		epoch:   time.Now(),
		running: map[driver.LeaseRef]*runningJob{},
		stopped: make(chan struct{}),
	}
	c.jobBase = context.WithValue(context.Background(), clientKey{}, c)
	c.fetchers = make(map[string]*fetcher, len(cfg.Queues))
	for name, q := range cfg.Queues {
		c.fetchers[name] = newFetcher(c, name, q)
	}
	return c, nil
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

// Migrate applies the driver's schema migrations. It is idempotent. It
// refuses (ErrSchemaTooNew) a database migrated by a newer leasehold; use
// Driver().Migrate to learn the versions before and after.
func (c *Client) Migrate(ctx context.Context) error {
	_, err := c.driver.Migrate(ctx)
	return err
}

// Start launches the fetchers (one per queue, when Workers has handlers),
// the heartbeater, the completer, the stuck watcher and, when the driver
// supports it and PollOnly is off, the LISTEN/NOTIFY listener. Background
// work runs until Stop; ctx only bounds Start itself, which reads the
// database's schema version: when ctx is done first, Start returns an error
// wrapping ctx's error and the client is left as it was, ready for another
// Start. A Stop called meanwhile ends the wait, and Start returns
// ErrClientStopped. Starting twice is an error; starting after Stop returns
// ErrClientStopped. Start freezes Config.Workers: AddWorker on it returns
// ErrWorkersFrozen from then on.
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
		return nil, fmt.Errorf("leasehold: client already started")
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

// launch starts every background part of a client that passed its schema
// check. c.mu is held.
func (c *Client) launch() {
	c.kinds = c.cfg.Workers.freeze() // AddWorker refuses from now on
	bg, cancel := context.WithCancel(context.Background())
	c.cancel = cancel
	c.claimCtx, c.abortClaims = context.WithCancel(context.Background())
	c.state = stateRunning
	c.hb = newHeartbeater(c)
	c.comp = newCompleter(c)
	c.pool = newWorkerPool(c.runClaimed)
	c.hb.start()
	c.comp.start()
	if !c.cfg.DisableWatcher {
		c.goBackground(func() { c.runWatcher(bg) })
	}
	if len(c.kinds) == 0 {
		return
	}
	for _, f := range c.fetchers {
		c.goBackground(func() { f.loop(bg) })
	}
	if n, ok := c.driver.(driver.Notifier); ok && !c.cfg.PollOnly {
		c.goBackground(func() { c.listen(bg, n) })
	}
}

func (c *Client) goBackground(fn func()) {
	c.bgWG.Add(1)
	go func() {
		defer c.bgWG.Done()
		fn()
	}()
}

func (c *Client) listen(ctx context.Context, n driver.Notifier) {
	err := n.Listen(ctx, c.wake)
	if err != nil && ctx.Err() == nil {
		c.cfg.Logger.Error("leasehold: listener stopped", "err", err)
	}
}

// wake pokes the fetcher of queue, if this client works it.
func (c *Client) wake(queue string) {
	if f := c.fetchers[queue]; f != nil {
		f.poke()
	}
}
