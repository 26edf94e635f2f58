// Package demo tells the lease story of leasehold for real: it enqueues
// payment jobs, runs worker subprocesses that charge them through a
// stand-in payment provider which sometimes stalls longer than the lease
// TTL, SIGKILLs one worker and freezes another in the middle of a charge,
// lets expired leases come back, and checks that every payment was charged
// and recorded exactly once.
package demo

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/payments"
	"github.com/leasehold/leasehold/view"
)

// DefaultPath is the SQLite file the demo creates when no --db is given.
const DefaultPath = "leasehold-demo.db"

// Defaults of Options.
const (
	DefaultPayments         = 60
	DefaultWorkers          = 4
	DefaultConcurrency      = 2
	DefaultTTL              = 2 * time.Second
	DefaultWatcherInterval  = 500 * time.Millisecond
	DefaultStallProbability = 0.1
	DefaultTimeout          = 2 * time.Minute
)

// Options configure a demo run. Zero fields take the defaults.
type Options struct {
	Target cli.Target
	// Fresh deletes the SQLite file (and its WAL) before the run.
	Fresh           bool
	Payments        int
	Workers         int
	Concurrency     int // jobs at once per worker
	TTL             time.Duration
	WatcherInterval time.Duration
	// StallProbability is the share of charges that stall (besides the
	// two the story needs); 0 takes the default, a negative value none.
	StallProbability float64
	// StallFor is how long a stalled charge waits; default 1.5 x TTL.
	StallFor time.Duration
	// Timeout bounds the whole run.
	Timeout time.Duration
	// Executable is the leasehold binary the workers run.
	Executable string
	// Out receives the story and the progress; TTY redraws the progress
	// line in place.
	Out io.Writer
	TTY bool
}

func (o Options) withDefaults() Options {
	o.Payments = cmp.Or(o.Payments, DefaultPayments)
	o.Workers = cmp.Or(o.Workers, DefaultWorkers)
	o.Concurrency = cmp.Or(o.Concurrency, DefaultConcurrency)
	o.TTL = cmp.Or(o.TTL, DefaultTTL)
	o.WatcherInterval = cmp.Or(o.WatcherInterval, DefaultWatcherInterval)
	o.StallProbability = cmp.Or(o.StallProbability, DefaultStallProbability)
	o.StallFor = cmp.Or(o.StallFor, o.TTL*3/2)
	o.Timeout = cmp.Or(o.Timeout, DefaultTimeout)
	return o
}

// demo is one run.
type demo struct {
	o      Options
	scr    *screen
	run    string // random id of the run: names the queue and payments
	queue  string
	start  time.Time
	db     *cli.DB
	client *leasehold.Client // operator client (no workers)
	ledger *payments.Ledger

	provider *payments.Provider
	stalls   chan payments.ChargeRequest
	stallMu  sync.Mutex
	stallLog []payments.ChargeRequest
	stallers map[string]bool // owners whose first charge was stalled on purpose
	requests int             // charge requests seen by shouldStall

	procs []*proc
	exits chan exitEvent
	story story
}

// Run runs the demo and returns its summary; Summary.OK says whether
// every payment was completed, charged once and recorded once. An error
// means the demo could not run to the end.
func Run(ctx context.Context, o Options) (*Summary, error) {
	o = o.withDefaults()
	if o.Executable == "" {
		return nil, errors.New("demo: no executable for the workers")
	}
	ctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	run, err := newRunID()
	if err != nil {
		return nil, err
	}
	d := &demo{
		o: o, scr: newScreen(o.Out, o.TTY), run: run, queue: "demo-" + run, start: time.Now(),
		stalls: make(chan payments.ChargeRequest, 4096), stallers: map[string]bool{},
		exits: make(chan exitEvent, o.Workers),
	}
	defer d.teardown()
	if err := d.setup(ctx); err != nil {
		return nil, err
	}
	if err := d.startWorkers(); err != nil {
		return nil, err
	}
	if err := d.loop(ctx); err != nil {
		return nil, err
	}
	d.scr.EndStatus()
	d.scr.Event("all %d payments are finished; stopping the workers", o.Payments)
	stats := d.stopWorkers()
	return d.summarize(context.WithoutCancel(ctx), stats)
}

func newRunID() (string, error) {
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("demo: run id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// teardown stops whatever is still running.
func (d *demo) teardown() {
	d.stopAll()
	if d.provider != nil {
		_ = d.provider.Close()
	}
	if d.db != nil {
		_ = d.db.Close()
	}
}

// loop follows the run until every payment is finished.
func (d *demo) loop(ctx context.Context) error {
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return d.interrupted(ctx)
		case req := <-d.stalls:
			d.onStall(ctx, req)
		case e := <-d.exits:
			if ctx.Err() != nil {
				return d.interrupted(ctx) // Ctrl-C reaches the workers too
			}
			if !e.p.Killed {
				d.scr.EndStatus()
				return fmt.Errorf("worker %s exited unexpectedly (%v): %s", e.p.name, e.p.Err(), e.p.stderrTail())
			}
		case <-tick.C:
			done, err := d.tick(ctx)
			if err != nil || done {
				return err
			}
		}
	}
}

func (d *demo) interrupted(ctx context.Context) error {
	d.scr.EndStatus()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("demo did not finish within %s", d.o.Timeout)
	}
	return errors.New("demo interrupted")
}

// stopAll stops the workers still running, all at once.
func (d *demo) stopAll() {
	var wg sync.WaitGroup
	for _, p := range d.procs {
		if p.Killed {
			continue
		}
		wg.Add(1)
		go func() { defer wg.Done(); p.stop() }()
	}
	wg.Wait()
}

// stopWorkers stops the surviving workers and collects their counters.
func (d *demo) stopWorkers() []view.StatsView {
	d.stopAll()
	var stats []view.StatsView
	for _, p := range d.procs {
		if p.Killed {
			continue
		}
		s, err := p.stats()
		if err != nil {
			d.scr.Event("%v", err)
			continue
		}
		stats = append(stats, s)
	}
	return stats
}
