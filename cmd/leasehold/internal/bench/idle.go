package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/leasehold/leasehold"
)

// Defaults of the idle phase's options.
const (
	DefaultIdleQueues    = 10_000
	DefaultIdleFor       = 30 * time.Second
	DefaultIdleRate      = 10
	DefaultIdlePickupFor = 10 * time.Second
	// idleWarmUp lets the consumer start (and look at every queue once)
	// before the idle window is counted.
	idleWarmUp = 3 * time.Second
	// idleMaxWorkers is each idle queue's MaxWorkers.
	idleMaxWorkers = 10
)

// SourceXactCommit counts statements as the commits and rollbacks of the
// scratch database (pg_stat_database), when pg_stat_statements is not
// loaded: each statement outside a transaction is one commit.
const SourceXactCommit = "pg_stat_database xact_commit + xact_rollback"

// IdleResult is the cost of one client serving many queues that have no
// jobs, and its pickup latency for jobs then inserted by another client
// into random queues at a low rate.
type IdleResult struct {
	Mode   string `json:"mode"`
	Queues int    `json:"queues"`
	// Seconds is the length of the idle window.
	Seconds float64 `json:"seconds"`
	// Source says where Statements come from: SourcePgStatStatements,
	// SourceXactCommit or SourceDriverCalls.
	Source           string  `json:"source"`
	Statements       int64   `json:"statements"`
	StatementsPerSec float64 `json:"statements_per_sec"`
	// DriverCalls counts the consumer's driver calls in the window.
	DriverCalls       int64         `json:"driver_calls"`
	DriverCallsPerSec float64       `json:"driver_calls_per_sec"`
	Pickup            LatencyResult `json:"pickup"`
}

func (b *bench) runIdle(ctx context.Context) error {
	modes := []string{ModeInProcess, ModePollOnly}
	if b.postgres() {
		modes = []string{ModeNotify, ModePollOnly}
	}
	return forModes(ctx, modes, b.idleOnce, func(r IdleResult) {
		b.rep.Idle = append(b.rep.Idle, r)
		b.logf("idle: %s, %d queues: %.2f statements/s (%s), %.2f driver calls/s; pickup at %d/s: p50 %.1f ms, p95 %.1f ms, p99 %.1f ms, max %.1f ms",
			r.Mode, r.Queues, r.StatementsPerSec, r.Source, r.DriverCallsPerSec, r.Pickup.Rate,
			r.Pickup.P50, r.Pickup.P95, r.Pickup.P99, r.Pickup.Max)
	})
}

// idleQueueName is the name of idle queue i.
func idleQueueName(i int) string { return fmt.Sprintf("idle%05d", i) }

func (b *bench) idleOnce(ctx context.Context, mode string) (IdleResult, error) {
	o := b.opts
	total := max(1, int(float64(o.IdleRate)*o.IdlePickupFor.Seconds()))
	r := IdleResult{Mode: mode, Queues: o.IdleQueues, Seconds: o.IdleFor.Seconds(),
		Pickup: LatencyResult{Mode: mode, Rate: o.IdleRate, Jobs: total, PollInterval: leasehold.DefaultPollInterval.String()}}
	s, clock, workers, err := b.pickupScratch(ctx, total)
	if err != nil {
		return r, err
	}
	defer s.Close()
	queues := make(map[string]leasehold.QueueConfig, o.IdleQueues)
	for i := range o.IdleQueues {
		queues[idleQueueName(i)] = leasehold.QueueConfig{MaxWorkers: idleMaxWorkers}
	}
	var calls callCounts
	consumer, err := leasehold.NewClient(leasehold.Config{Driver: counted(s.drv, &calls), Workers: workers,
		Queues: queues, PollOnly: mode == ModePollOnly, Logger: o.Logger})
	if err != nil {
		return r, err
	}
	if err := consumer.Start(ctx); err != nil {
		return r, err
	}
	defer func() { _ = consumer.Stop(context.WithoutCancel(ctx)) }()
	if err := sleep(ctx, idleWarmUp); err != nil {
		return r, err
	}
	if err := b.countIdle(ctx, s, &r, &calls); err != nil {
		return r, err
	}
	inserter, closeInserter, err := b.producer(ctx, s, mode, consumer)
	if err != nil {
		return r, err
	}
	defer closeInserter()
	pick := func(int) *leasehold.InsertOpts {
		return &leasehold.InsertOpts{Queue: idleQueueName(rand.IntN(o.IdleQueues))}
	}
	if err := paceInserts(ctx, inserter, clock, o.IdleRate, pick); err != nil {
		return r, err
	}
	if err := clock.wait(ctx, o.Timeout); err != nil {
		return r, err
	}
	clock.fill(&r.Pickup)
	return r, nil
}

// countIdle counts the statements of the idle window, from the server
// when it can, and the consumer's driver calls.
func (b *bench) countIdle(ctx context.Context, s *scratch, r *IdleResult, calls *callCounts) error {
	server, err := b.serverStatements(ctx, s, r)
	if err != nil {
		return err
	}
	calls0 := calls.total()
	start := time.Now()
	if err := sleep(ctx, b.opts.IdleFor); err != nil {
		return err
	}
	secs := time.Since(start).Seconds()
	r.Seconds = secs
	r.DriverCalls = calls.total() - calls0
	r.DriverCallsPerSec = float64(r.DriverCalls) / secs
	n, err := server(ctx)
	if err != nil {
		return err
	}
	if r.Source == SourceDriverCalls {
		n = r.DriverCalls
	}
	r.Statements = n
	r.StatementsPerSec = float64(n) / secs
	return nil
}

// serverStatements starts counting statements on the server and returns
// the function that reads the count since then; it sets r.Source.
func (b *bench) serverStatements(ctx context.Context, s *scratch, r *IdleResult) (func(context.Context) (int64, error), error) {
	switch {
	case b.stats != nil:
		r.Source = SourcePgStatStatements
		if err := b.stats.reset(ctx); err != nil {
			return nil, err
		}
		return func(ctx context.Context) (int64, error) {
			n, _, err := b.stats.read(ctx)
			return n, err
		}, nil
	case s.pool != nil:
		r.Source = SourceXactCommit
		before, err := s.xacts(ctx)
		if err != nil {
			return nil, err
		}
		return func(ctx context.Context) (int64, error) {
			after, err := s.xacts(ctx)
			// The read of before is one transaction of the window.
			return after - before - 1, err
		}, nil
	default:
		r.Source = SourceDriverCalls
		return func(context.Context) (int64, error) { return 0, nil }, nil
	}
}

// xactsSQL reads the transactions of the current database. Another
// backend's counts reach it within about a second of its transactions
// (PostgreSQL 15 flushes statistics at most once a second per backend).
const xactsSQL = `SELECT xact_commit + xact_rollback FROM pg_stat_database WHERE datname = current_database()`

// xacts returns the transactions committed and rolled back in the
// scratch schema's database, read on a connection of its own.
func (s *scratch) xacts(ctx context.Context) (int64, error) {
	var n int64
	if err := s.pool.QueryRow(ctx, xactsSQL).Scan(&n); err != nil {
		return 0, fmt.Errorf("bench: read pg_stat_database: %w", err)
	}
	return n, nil
}
