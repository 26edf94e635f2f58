package bench

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// LeaseResult is one lease overhead measurement: InFlight jobs held at
// once by Processes clients (each with its own driver and pool, as worker
// processes would be), each job sleeping past several heartbeat
// intervals, and what renewing their leases costs while all are in flight.
type LeaseResult struct {
	Processes int     `json:"processes"`
	InFlight  int     `json:"in_flight"`
	TTL       string  `json:"ttl"`
	Interval  string  `json:"heartbeat_interval"`
	Seconds   float64 `json:"seconds"` // the window measured
	// HeartbeatsPerSec counts heartbeat statements; HeartbeatRowsPerSec
	// the leases they renewed.
	HeartbeatsPerSec    float64 `json:"heartbeats_per_sec"`
	HeartbeatRowsPerSec float64 `json:"heartbeat_rows_per_sec"`
	// MeanHeartbeatMillis is the mean server time of one heartbeat
	// statement (pg_stat_statements only).
	MeanHeartbeatMillis float64 `json:"mean_heartbeat_ms,omitempty"`
	// StatementsPerSec counts every statement in the window.
	StatementsPerSec float64 `json:"statements_per_sec"`
	// LeasesLost counts leases lost in the window (expected 0).
	LeasesLost int64 `json:"leases_lost"`
}

// sleepArgs is the kind of the lease jobs: sleep until cancelled.
type sleepArgs struct{}

// Kind names the sleeping job kind.
func (sleepArgs) Kind() string { return "bench.sleep" }

func (b *bench) runLease(ctx context.Context) error {
	n := b.opts.LeaseJobs
	for _, c := range []struct{ procs, jobs int }{{1, max(1, n/10)}, {1, n}, {2, n}} {
		r, err := b.leaseOnce(ctx, c.procs, c.jobs)
		if err != nil {
			return fmt.Errorf("%d processes, %d jobs: %w", c.procs, c.jobs, err)
		}
		b.rep.Lease = append(b.rep.Lease, r)
		b.logf("lease: %d process(es), %d jobs in flight: %.2f heartbeat statements/s (%.0f leases/s), %.2f statements/s",
			r.Processes, r.InFlight, r.HeartbeatsPerSec, r.HeartbeatRowsPerSec, r.StatementsPerSec)
	}
	return nil
}

func (b *bench) leaseOnce(ctx context.Context, procs, jobs int) (LeaseResult, error) {
	ttl := b.opts.LeaseTTL
	r := LeaseResult{Processes: procs, InFlight: jobs, TTL: ttl.String(), Interval: (ttl / 3).String()}
	s, err := b.newScratch(ctx)
	if err != nil {
		return r, err
	}
	defer s.Close()
	if err := insertSleepers(ctx, s.drv, jobs); err != nil {
		return r, err
	}
	workers := leasehold.NewWorkers()
	hold := b.opts.LeaseHold
	if err := leasehold.AddWorker(workers, leasehold.WorkFunc[sleepArgs](func(ctx context.Context, _ *leasehold.Job[sleepArgs]) error {
		return sleep(ctx, hold)
	})); err != nil {
		return r, err
	}
	var n callCounts
	clients := make([]*leasehold.Client, procs)
	for i := range clients {
		drv, closeDrv, err := s.secondDriver(ctx)
		if err != nil {
			return r, err
		}
		defer closeDrv()
		per := jobs/procs + min(1, jobs%procs)
		clients[i], err = leasehold.NewClient(leasehold.Config{Driver: counted(drv, &n), Workers: workers,
			LeaseTTL: ttl, Logger: b.opts.Logger, DisableWatcher: i > 0,
			Queues: map[string]leasehold.QueueConfig{leasehold.DefaultQueue: {MaxWorkers: per}}})
		if err != nil {
			return r, err
		}
	}
	for _, c := range clients {
		if err := c.Start(ctx); err != nil {
			return r, err
		}
		defer func() { _ = c.Stop(context.WithoutCancel(ctx)) }()
	}
	running := func() (sum int64) {
		for _, c := range clients {
			sum += c.Stats().Running
		}
		return sum
	}
	deadline := time.Now().Add(hold)
	for running() < int64(jobs) {
		if time.Now().After(deadline) {
			return r, fmt.Errorf("only %d of %d jobs in flight after %v: raise --lease-hold", running(), jobs, hold)
		}
		if err := sleep(ctx, completionPollEvery); err != nil {
			return r, err
		}
	}
	// Measure while every job is in flight: until the first could finish.
	if err := b.resetStatements(ctx); err != nil {
		return r, err
	}
	hb0, rows0, lost0 := n.heartbeat.Load(), n.heartbeatRows.Load(), leasesLost(clients)
	total0 := n.total()
	start := time.Now()
	if err := sleep(ctx, time.Until(deadline)); err != nil {
		return r, err
	}
	window := time.Since(start)
	r.Seconds = window.Seconds()
	r.HeartbeatsPerSec = float64(n.heartbeat.Load()-hb0) / r.Seconds
	r.HeartbeatRowsPerSec = float64(n.heartbeatRows.Load()-rows0) / r.Seconds
	r.LeasesLost = leasesLost(clients) - lost0
	stmts := n.total() - total0
	if b.stats != nil {
		var top []Statement
		if stmts, top, err = b.stats.read(ctx); err != nil {
			return r, err
		}
		r.MeanHeartbeatMillis = heartbeatMillis(top)
	}
	r.StatementsPerSec = float64(stmts) / r.Seconds
	return r, nil
}

func leasesLost(cs []*leasehold.Client) (n int64) {
	for _, c := range cs {
		n += c.Stats().LeaseLost
	}
	return n
}

// heartbeatMillis finds the heartbeat statement among top, by the
// opening of pgdriver's heartbeatSQL.
func heartbeatMillis(top []Statement) float64 {
	for _, s := range top {
		if strings.HasPrefix(s.Query, "WITH renewable AS (") {
			return s.MeanMillis
		}
	}
	return 0
}

// insertSleepers inserts n sleeping jobs.
func insertSleepers(ctx context.Context, drv driver.Driver, n int) error {
	c, err := leasehold.NewClient(leasehold.Config{Driver: drv})
	if err != nil {
		return err
	}
	jobs := make([]leasehold.InsertManyParams, n)
	for i := range jobs {
		jobs[i] = leasehold.InsertManyParams{Args: sleepArgs{}}
	}
	_, err = c.InsertBulk(ctx, jobs)
	return err
}
