package chaos

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/fleet"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/payments"
	"github.com/leasehold/leasehold/view"
)

// Queue is the queue of the harness's payment jobs.
const Queue = "chaos"

// ReconcileQueue holds the payment jobs under the reconcile policy: one in
// reconcileEvery of the harness's payments. A lease of theirs that expires
// goes to reconciling, with a reconcile job in ReconcilerQueue.
const (
	ReconcileQueue  = "chaos-reconcile"
	ReconcilerQueue = "chaos-reconciler"
	reconcileEvery  = 4
)

// workerQueues are the queues every worker works: both payment queues and
// the reconcile jobs' queue.
func workerQueues(concurrency int) map[string]leasehold.QueueConfig {
	return map[string]leasehold.QueueConfig{
		Queue: {MaxWorkers: concurrency},
		ReconcileQueue: {MaxWorkers: concurrency,
			Reconcile: &leasehold.ReconcilePolicy{Queue: ReconcilerQueue, MaxAttempts: 1000}},
		ReconcilerQueue: {MaxWorkers: max(concurrency/4, 1)},
	}
}

// WorkerOptions configure one worker process of the harness.
type WorkerOptions struct {
	DB          *cli.DB
	Owner       string
	Concurrency int
	TTL         time.Duration
	// WatcherInterval and PollInterval are the client's settings.
	WatcherInterval time.Duration
	PollInterval    time.Duration
	// ShutdownTimeout is how long Stop lets running jobs finish.
	ShutdownTimeout time.Duration
	ProviderURL     string
	// ReportEvery is the period of the counters report.
	ReportEvery time.Duration
	// Out receives the messages for the orchestrator (JSON lines).
	Out    io.Writer
	Logger *slog.Logger
}

// openRetryFor is how long a worker keeps trying to reach the database
// when it starts: a worker restarted while PostgreSQL restarts waits for it.
const openRetryFor = time.Minute

// OpenWorkerDB opens a worker's database, retrying while it does not
// answer (for up to a minute, or until ctx ends).
func OpenWorkerDB(ctx context.Context, t cli.Target) (*cli.DB, error) {
	deadline := time.Now().Add(openRetryFor)
	for {
		db, err := cli.Open(ctx, t, cli.OpenOptions{})
		if err == nil || time.Now().After(deadline) || ctx.Err() != nil {
			return db, err
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// startRetrying starts client, retrying for up to openRetryFor while the
// database does not answer: a worker restarted just as PostgreSQL restarts
// may open its pool before the server goes down and read the schema
// version while it is down. A failed Start leaves the client startable.
// A schema at the wrong version is not retried.
func startRetrying(ctx context.Context, client *leasehold.Client) error {
	deadline := time.Now().Add(openRetryFor)
	for {
		err := client.Start(ctx)
		var schema *leasehold.SchemaVersionError
		if err == nil || errors.As(err, &schema) || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// RunWorker runs the payment worker until ctx ends, then stops it
// gracefully. It writes its counters to Out every ReportEvery and when it
// stops, and reports each refused CompleteTx and each renewal at once.
func RunWorker(ctx context.Context, o WorkerOptions) error {
	sqlDB, err := o.DB.SQL()
	if err != nil {
		return err
	}
	ledger, err := payments.NewUnkeyedLedger(sqlDB, payments.Dialect(o.DB.Target.Dialect))
	if err != nil {
		return err
	}
	out := fleet.NewEmitter(o.Out)
	driver, rec := wrap(o.DB.Driver, o.DB.Target.Dialect, out)
	client, err := payments.NewClient(leasehold.Config{
		Driver:          driver,
		Queues:          workerQueues(o.Concurrency),
		LeaseTTL:        o.TTL,
		WatcherInterval: o.WatcherInterval,
		PollInterval:    o.PollInterval,
		ShutdownTimeout: o.ShutdownTimeout,
		Owner:           o.Owner,
		Logger:          o.Logger,
		RetryPolicy:     &leasehold.ExponentialBackoff{Base: 50 * time.Millisecond, Max: time.Second, Jitter: 0.2},
	}, ledger, o.ProviderURL, payments.Options{HTTPClient: detachedClient(o.Concurrency), Reconcile: true})
	if err != nil {
		return fmt.Errorf("chaos worker: %w", err)
	}
	bg, stopBG := context.WithCancel(context.WithoutCancel(ctx))
	defer stopBG()
	go rec.sampleClock(bg, max(o.TTL/20, 10*time.Millisecond))
	if err := startRetrying(ctx, client); err != nil {
		return fmt.Errorf("chaos worker: start: %w", err)
	}
	report := func(typ string) {
		s, c := view.NewStatsView(client.Owner(), client.Stats()), rec.Calls()
		out.Emit(message{Report: fleet.Report{Type: typ, Stats: &s}, Calls: &c})
	}
	report(fleet.TypeReport) // the first: the client has started (see availability)
	t := time.NewTicker(o.ReportEvery)
	defer t.Stop()
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
		case <-t.C:
			report(fleet.TypeReport)
		}
	}
	stopCtx, cancel := context.WithTimeout(context.Background(), o.ShutdownTimeout+10*time.Second)
	defer cancel()
	err = client.Stop(stopCtx)
	report(fleet.TypeFinal)
	if err != nil {
		return fmt.Errorf("chaos worker: stop: %w", err)
	}
	return nil
}

// detachedClient is the provider client of the workers. Its calls ignore
// the job's cancellation, like a provider SDK that takes no context: a
// worker frozen in the middle of a charge carries on after SIGCONT as if it
// still owned its job, and tries to complete it. That is the case the fence
// exists for, and what makes a freeze produce refused completions.
func detachedClient(concurrency int) *http.Client {
	base := http.DefaultTransport.(*http.Transport).Clone()
	base.MaxIdleConnsPerHost = max(concurrency, 2)
	return &http.Client{Transport: detachedTransport{base: base}}
}

type detachedTransport struct{ base http.RoundTripper }

// RoundTrip sends r on a context without r's cancellation.
func (t detachedTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	return t.base.RoundTrip(r.WithContext(context.WithoutCancel(r.Context())))
}
