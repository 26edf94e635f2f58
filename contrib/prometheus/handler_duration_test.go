package leaseholdprom_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/leasehold/leasehold"
	leaseholdprom "github.com/leasehold/leasehold/contrib/prometheus"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/pgdriver"
	"github.com/leasehold/leasehold/pgdriver/pgtest"
	"github.com/leasehold/leasehold/sqlitedriver"
	"github.com/leasehold/leasehold/sqlitedriver/sqlitetest"
)

// inTxArgs are the jobs of this file's tests, whose handlers use
// CompleteTx.
type inTxArgs struct{}

func (inTxArgs) Kind() string { return "test.in_tx" }

// inTxSeries are the labels of inTxArgs jobs' series.
var inTxSeries = map[string]string{"queue": leasehold.DefaultQueue, "kind": inTxArgs{}.Kind()}

// onBothDrivers runs test on a fresh SQLite database and on a fresh
// PostgreSQL schema.
func onBothDrivers(t *testing.T, test func(*testing.T, driver.Driver)) {
	t.Run("sqlite", func(t *testing.T) { test(t, sqlitetest.Open(t)) })
	t.Run("postgres", func(t *testing.T) { test(t, pgtest.Open(t)) })
}

// exec runs statement q on d's database.
func exec(ctx context.Context, d driver.Driver, q string) error {
	switch d := d.(type) {
	case *sqlitedriver.Driver:
		_, err := d.DB().ExecContext(ctx, q)
		return err
	case *pgdriver.Driver:
		_, err := d.Pool().Exec(ctx, q)
		return err
	}
	return fmt.Errorf("no statements for %T", d)
}

// completeInTx calls CompleteTx for job in a transaction of its own on d,
// which it commits when CompleteTx succeeds and rolls back otherwise; it
// returns CompleteTx's error, or the commit's.
func completeInTx(ctx context.Context, d driver.Driver, job *leasehold.JobRow) error {
	c := leasehold.ClientFromContext(ctx)
	switch d := d.(type) {
	case *sqlitedriver.Driver:
		tx, err := d.DB().BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		if err := c.CompleteTx(ctx, tx, job); err != nil {
			_ = tx.Rollback()
			return err
		}
		return tx.Commit()
	case *pgdriver.Driver:
		tx, err := d.Pool().Begin(ctx)
		if err != nil {
			return err
		}
		if err := c.CompleteTx(ctx, tx, job); err != nil {
			_ = tx.Rollback(context.Background())
			return err
		}
		return tx.Commit(ctx)
	}
	return fmt.Errorf("no transactions for %T", d)
}

// inTxClient returns a client on d, with metrics, whose handler of
// inTxArgs jobs is h, in a default queue configured as q.
func inTxClient(t *testing.T, d driver.Driver, q leasehold.QueueConfig,
	h func(context.Context, *leasehold.Job[inTxArgs]) error) (*leasehold.Client, *prometheus.Registry) {
	t.Helper()
	ws := leasehold.NewWorkers()
	if err := leasehold.AddWorker(ws, leasehold.WorkFunc[inTxArgs](h)); err != nil {
		t.Fatal(err)
	}
	c, reg, _ := metricsClient(t, leasehold.Config{Driver: d, Workers: ws, PollInterval: 10 * time.Millisecond,
		LeaseTTL: time.Minute, ShutdownTimeout: 50 * time.Millisecond,
		Queues: map[string]leasehold.QueueConfig{leasehold.DefaultQueue: q}}, leaseholdprom.Options{QueueStatsInterval: -1})
	return c, reg
}

// count returns the value of the inTxArgs series of name (a histogram's
// sample count).
func count(t *testing.T, reg prometheus.Gatherer, name string) float64 {
	t.Helper()
	v, _ := valueOf(t, reg, name, inTxSeries)
	return v
}

// TestRefusedCompleteTxRunObserved: a handler whose lease is taken over
// before its CompleteTx, which the fence refuses, then returns that
// refusal. Its run is counted refused once and its duration is observed,
// as leasehold_handler_duration_seconds says of refused runs.
func TestRefusedCompleteTxRunObserved(t *testing.T) {
	onBothDrivers(t, func(t *testing.T, d driver.Driver) {
		c, reg := inTxClient(t, d, leasehold.QueueConfig{}, func(ctx context.Context, job *leasehold.Job[inTxArgs]) error {
			if err := exec(ctx, d, fmt.Sprintf(
				`UPDATE leasehold_jobs SET lease_owner = 'thief', attempt = attempt + 1 WHERE id = %d`, job.ID)); err != nil {
				return err
			}
			return completeInTx(ctx, d, job.JobRow) // refused: ErrLeaseLost
		})
		if err := c.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		if _, err := c.Insert(t.Context(), inTxArgs{}, nil); err != nil {
			t.Fatal(err)
		}
		eventually(t, "the refused run's duration", func() bool {
			return count(t, reg, "leasehold_handler_duration_seconds") == 1
		})
		if err := c.Stop(context.Background()); err != nil {
			t.Fatal(err)
		}
		if n := count(t, reg, "leasehold_fenced_writes_refused_total"); n != 1 {
			t.Errorf("refused writes %v, want 1", n)
		}
		if s := c.Stats(); s.FinishRefused != 1 {
			t.Errorf("Stats.FinishRefused %d, want 1", s.FinishRefused)
		}
	})
}

// TestStopAfterCompleteTxRunObserved: a handler completes its job with
// CompleteTx (committed; or refused, its lease taken over) and is then cut
// off by Stop. Its run is observed once with its duration, with the
// completion or the one refusal, in a plain queue (where Stop releases
// the lease) as in a FlagStuck one (where nothing is written and the
// lease is left to the watcher).
func TestStopAfterCompleteTxRunObserved(t *testing.T) {
	for _, tc := range []struct {
		name  string
		queue leasehold.QueueConfig
	}{{"plain", leasehold.QueueConfig{}}, {"flagstuck", leasehold.QueueConfig{FlagStuck: true}}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Run("committed", func(t *testing.T) {
				onBothDrivers(t, func(t *testing.T, d driver.Driver) {
					testStopAfterCompleteTx(t, d, tc.queue, false)
				})
			})
			t.Run("refused", func(t *testing.T) {
				onBothDrivers(t, func(t *testing.T, d driver.Driver) {
					testStopAfterCompleteTx(t, d, tc.queue, true)
				})
			})
		})
	}
}

func testStopAfterCompleteTx(t *testing.T, d driver.Driver, q leasehold.QueueConfig, takenOver bool) {
	called := make(chan error, 1)
	c, reg := inTxClient(t, d, q, func(ctx context.Context, job *leasehold.Job[inTxArgs]) error {
		if takenOver {
			if err := exec(ctx, d, fmt.Sprintf(
				`UPDATE leasehold_jobs SET lease_owner = 'thief', attempt = attempt + 1 WHERE id = %d`, job.ID)); err != nil {
				return err
			}
		}
		called <- completeInTx(ctx, d, job.JobRow)
		<-ctx.Done() // cut off by Stop once its ShutdownTimeout has passed
		return nil
	})
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Insert(t.Context(), inTxArgs{}, nil); err != nil {
		t.Fatal(err)
	}
	err := <-called
	if takenOver == (err == nil) {
		t.Fatalf("CompleteTx: %v, want it refused: %v", err, takenOver)
	}
	if err := c.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	ended := func() bool {
		done, _ := valueOf(t, reg, "leasehold_jobs_finished_total",
			map[string]string{"queue": leasehold.DefaultQueue, "kind": inTxArgs{}.Kind(), "outcome": "completed"})
		return done+count(t, reg, "leasehold_fenced_writes_refused_total") >= 1
	}
	eventually(t, "the run's ending", ended)
	if n := count(t, reg, "leasehold_handler_duration_seconds"); n != 1 {
		t.Errorf("handler durations %v, want 1", n)
	}
	s := c.Stats()
	if want := map[bool]int64{false: 0, true: 1}[takenOver]; s.FinishRefused != want {
		t.Errorf("Stats.FinishRefused %d, want %d", s.FinishRefused, want)
	}
	if want := map[bool]int64{false: 1, true: 0}[takenOver]; s.Completed != want {
		t.Errorf("Stats.Completed %d, want %d", s.Completed, want)
	}
}
