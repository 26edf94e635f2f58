// Package demo tells the lease story of leasehold for real: it enqueues
// payment jobs, runs worker subprocesses that charge them through a
// stand-in payment provider which sometimes stalls longer than the lease
// TTL, SIGKILLs one worker and freezes another in the middle of a charge,
// lets expired leases come back, and checks that every payment was charged
// and recorded exactly once.
//
// It is a narrated, scripted chaos run: its story is a script of fault
// steps (script.go) carried out with the worker processes and the fault
// actions of internal/fleet, which the chaos harness drives on a random
// schedule instead.
package demo

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"sync"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/fleet"
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

// MinWorkers is the fewest workers the demo's story can be told with: it
// SIGKILLs one and freezes another, and a third must be left running to
// take their leases over (its watcher and its claims). With two, nobody
// could take the frozen worker's leases: the story would wait out
// maxFreeze and the thawed worker finish them on its own lease.
const MinWorkers = 3

// MinReconcileWorkers is the fewest workers of the reconciliation story:
// it kills up to two of them, always leaving two (see kills).
const MinReconcileWorkers = 2

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
	o     Options
	scr   *screen
	run   string // random id of the run: names the queue and payments
	queue string
	// payments is the id range of the run's payment jobs, which the
	// progress line reads (paymentCounts).
	payments idRange
	start    time.Time
	db       *cli.DB
	client   *leasehold.Client // operator client (no workers)
	ledger   *payments.Ledger

	provider *payments.Provider
	trap     *fleet.Trap                 // the provider's stall hook: catches the workers the story harms
	fleet    *fleet.Fleet                // the worker processes
	stalls   chan payments.ChargeRequest // stalls the trap did not catch, to tell
	stallMu  sync.Mutex
	stallLog []payments.ChargeRequest // every stalled charge

	story story
	rec   *reconcileStory // the reconciliation story's, nil in the default one
}

// Run runs the demo and returns its summary; Summary.OK says whether
// every payment was completed, charged once and recorded once. An error
// means the demo could not run to the end.
func Run(ctx context.Context, o Options) (*Summary, error) {
	ctx, cancel := context.WithTimeout(ctx, o.withDefaults().Timeout)
	defer cancel()
	d, err := newDemo(o)
	if err != nil {
		return nil, err
	}
	defer d.teardown()
	if err := d.setup(ctx); err != nil {
		return nil, err
	}
	if err := d.play(ctx, d.script()); err != nil {
		return nil, err
	}
	d.scr.EndStatus()
	d.scr.Event("all %d payments are finished; stopping the workers", o.Payments)
	stats := d.stopWorkers()
	return d.summarize(context.WithoutCancel(ctx), stats)
}

// newDemo returns a run of o (defaults filled), with its trap and fleet.
func newDemo(o Options) (*demo, error) {
	o = o.withDefaults()
	if o.Executable == "" {
		return nil, errors.New("demo: no executable for the workers")
	}
	run, err := newRunID()
	if err != nil {
		return nil, err
	}
	d := &demo{
		o: o, scr: newScreen(o.Out, o.TTY), run: run, queue: "demo-" + run, start: time.Now(),
		stalls: make(chan payments.ChargeRequest, 4096),
	}
	d.trap = fleet.NewTrap(o.StallProbability, mrand.Uint64(), d.onStall)
	d.fleet = fleet.New(d.trap)
	return d, nil
}

func newRunID() (string, error) {
	var b [3]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("demo: run id: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

// stopWait is how long a worker may take to stop gracefully.
const stopWait = 20 * time.Second

// teardown stops whatever is still running.
func (d *demo) teardown() {
	d.fleet.StopAll(stopWait)
	d.fleet.Close()
	if d.provider != nil {
		_ = d.provider.Close()
	}
	if d.db != nil {
		_ = d.db.Close()
	}
}

func (d *demo) interrupted(ctx context.Context) error {
	d.scr.EndStatus()
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("demo did not finish within %s", d.o.Timeout)
	}
	return errors.New("demo interrupted")
}

// stopWorkers stops the surviving workers and collects the counters they
// reported as they stopped.
func (d *demo) stopWorkers() []view.StatsView {
	d.fleet.StopAll(stopWait)
	var stats []view.StatsView
	for _, p := range d.fleet.All() {
		if p.Killed() {
			continue
		}
		s, ok := p.FinalStats()
		if !ok {
			d.scr.Event("worker %s reported no counters as it stopped (%v): %s", p.Name(), p.Err(), p.LogTail(3))
			continue
		}
		stats = append(stats, s)
	}
	return stats
}
