package leasehold_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/pgdriver"
	"github.com/leasehold/leasehold/sqlitedriver"
)

// fencedArgs is the job of the fenced-call tests.
type fencedArgs struct{}

func (fencedArgs) Kind() string { return "fenced" }

// fencedTx begins a caller transaction on d's database and returns it
// with its commit and rollback.
func fencedTx(ctx context.Context, d driver.Driver) (tx any, commit, rollback func() error, err error) {
	switch d := d.(type) {
	case *sqlitedriver.Driver:
		t, err := d.DB().BeginTx(ctx, nil)
		if err != nil {
			return nil, nil, nil, err
		}
		return t, t.Commit, t.Rollback, nil
	case *pgdriver.Driver:
		t, err := d.Pool().Begin(ctx)
		if err != nil {
			return nil, nil, nil, err
		}
		return t, func() error { return t.Commit(context.Background()) },
			func() error { return t.Rollback(context.Background()) }, nil
	}
	return nil, nil, nil, fmt.Errorf("no transactions for %T", d)
}

// takeOver stands in for another worker taking job id over: another owner
// at the next attempt, lease still running.
func takeOver(ctx context.Context, d driver.Driver, id int64) error {
	q := fmt.Sprintf(`UPDATE leasehold_jobs SET lease_owner = 'thief', attempt = attempt + 1 WHERE id = %d`, id)
	var err error
	switch d := d.(type) {
	case *sqlitedriver.Driver:
		_, err = d.DB().ExecContext(ctx, q)
	case *pgdriver.Driver:
		_, err = d.Pool().Exec(ctx, q)
	default:
		err = fmt.Errorf("no statements for %T", d)
	}
	return err
}

// rollbackQuietly rolls back, ignoring a transaction already ended.
func rollbackQuietly(rollback func() error) {
	if err := rollback(); err != nil && !errors.Is(err, sql.ErrTxDone) && !errors.Is(err, pgx.ErrTxClosed) {
		panic(err)
	}
}

// fencedClient starts a client on d running handler for fencedArgs, with
// LeaseTTL ttl (0 for the default), and inserts one job; it returns the client, the
// job's id and a channel of the job's ending events (finished, refused,
// dropped).
func fencedClient(t *testing.T, d driver.Driver, ttl time.Duration,
	handler func(ctx context.Context, c *leasehold.Client, job *leasehold.Job[fencedArgs]) error,
) (*leasehold.Client, int64, <-chan leasehold.Event) {
	t.Helper()
	ws := leasehold.NewWorkers()
	if err := leasehold.AddWorker(ws, leasehold.WorkFunc[fencedArgs](
		func(ctx context.Context, job *leasehold.Job[fencedArgs]) error {
			return handler(ctx, leasehold.ClientFromContext(ctx), job)
		})); err != nil {
		t.Fatal(err)
	}
	c, err := leasehold.NewClient(leasehold.Config{
		Driver: d, Workers: ws, PollInterval: 10 * time.Millisecond, LeaseTTL: ttl,
		ShutdownTimeout: 5 * time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	ends, unsubscribe := c.SubscribeBuffered(64, leasehold.EventFinished, leasehold.EventFenceRefused, leasehold.EventOutcomeDropped)
	t.Cleanup(unsubscribe)
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	res, err := c.Insert(t.Context(), fencedArgs{}, &leasehold.InsertOpts{MaxAttempts: 3})
	if err != nil {
		t.Fatal(err)
	}
	return c, res.Job.ID, ends
}

// endingsOf waits for the first ending event of job id, then a while for
// any further one, and returns their kinds.
func endingsOf(t *testing.T, ends <-chan leasehold.Event, id int64) []leasehold.EventKind {
	t.Helper()
	var kinds []leasehold.EventKind
	wait := time.After(30 * time.Second)
	for {
		select {
		case ev := <-ends:
			if ev.Job != nil && ev.Job.ID == id {
				kinds = append(kinds, ev.Kind)
				wait = time.After(500 * time.Millisecond) // time for a second one to show
			}
		case <-wait:
			if len(kinds) == 0 {
				t.Fatalf("job %d: no ending event", id)
			}
			return kinds
		}
	}
}

// TestCompleteTxAgainAfterCommit: a handler whose CompleteTx committed and
// that calls CompleteTx again in a new transaction (retrying a commit
// whose reply it did not trust, say) is told the job is already
// completed, not that its lease was taken over; whatever it then
// returns, the attempt ends in one event, finished completed, and no
// refused write is counted.
func TestCompleteTxAgainAfterCommit(t *testing.T) {
	for _, returns := range []string{"nil", "its error"} {
		t.Run("returns "+returns, func(t *testing.T) {
			eachDriver(t, func(t *testing.T, d driver.Driver) {
				second := make(chan error, 1)
				c, id, ends := fencedClient(t, d, 0, func(ctx context.Context, c *leasehold.Client, job *leasehold.Job[fencedArgs]) error {
					tx, commit, rollback, err := fencedTx(ctx, d)
					if err != nil {
						return err
					}
					if err := c.CompleteTx(ctx, tx, job.JobRow); err != nil {
						rollbackQuietly(rollback)
						return err
					}
					if err := commit(); err != nil {
						return err
					}
					tx, _, rollback, err = fencedTx(ctx, d)
					if err != nil {
						return err
					}
					err = c.CompleteTx(ctx, tx, job.JobRow)
					rollbackQuietly(rollback)
					second <- err
					if returns == "nil" {
						return nil
					}
					return err
				})
				kinds := endingsOf(t, ends, id)
				err := <-second
				t.Logf("second CompleteTx: %v", err)
				if !errors.Is(err, leasehold.ErrAlreadyCompleted) || errors.Is(err, leasehold.ErrLeaseLost) {
					t.Errorf("second CompleteTx = %v; want ErrAlreadyCompleted, not ErrLeaseLost", err)
				}
				if len(kinds) != 1 || kinds[0] != leasehold.EventFinished {
					t.Errorf("ending events %v; want one finished", kinds)
				}
				if s := c.Stats(); s.Completed != 1 || s.FinishRefused != 0 {
					t.Errorf("stats: %d completed, %d refused; want 1, 0", s.Completed, s.FinishRefused)
				}
				if row, err := d.GetJob(t.Context(), id); err != nil || row.State != leasehold.StateCompleted {
					t.Errorf("job after: %+v, %v; want completed", row, err)
				}
			})
		})
	}
}

// TestRefusedCompleteTxThenNil: a CompleteTx refused because the job was
// taken over is the attempt's one refused write; a handler that then
// returns nil gets nothing more written or reported.
func TestRefusedCompleteTxThenNil(t *testing.T) {
	eachDriver(t, func(t *testing.T, d driver.Driver) {
		got := make(chan error, 1)
		// A long TTL: the refusal, not a heartbeat, is what finds the
		// lease gone.
		c, id, ends := fencedClient(t, d, time.Minute, func(ctx context.Context, c *leasehold.Client, job *leasehold.Job[fencedArgs]) error {
			if err := takeOver(ctx, d, job.ID); err != nil {
				return err
			}
			tx, _, rollback, err := fencedTx(ctx, d)
			if err != nil {
				return err
			}
			err = c.CompleteTx(ctx, tx, job.JobRow)
			rollbackQuietly(rollback)
			got <- err
			return nil
		})
		kinds := endingsOf(t, ends, id)
		if err := <-got; !errors.Is(err, leasehold.ErrLeaseLost) {
			t.Errorf("CompleteTx of a job taken over = %v; want ErrLeaseLost", err)
		}
		if len(kinds) != 1 || kinds[0] != leasehold.EventFenceRefused {
			t.Errorf("ending events %v; want one fence_refused", kinds)
		}
		if s := c.Stats(); s.FinishRefused != 1 || s.Completed != 0 {
			t.Errorf("stats: %d refused, %d completed; want 1, 0", s.FinishRefused, s.Completed)
		}
	})
}

// fencedCalls is what FenceTx, CompleteTx, Checkpoint and CheckpointTx
// returned to a handler.
type fencedCalls struct {
	fence, complete, checkpoint, checkpointTx error
}

// callFenced calls the four fenced calls with ctx for job, each
// transaction begun on a live context and rolled back.
func callFenced(ctx context.Context, d driver.Driver, c *leasehold.Client, job *leasehold.JobRow) (r fencedCalls, err error) {
	tx, _, rollback, err := fencedTx(context.Background(), d)
	if err != nil {
		return r, err
	}
	r.fence = leasehold.FenceTx(ctx, tx)
	r.complete = c.CompleteTx(ctx, tx, job)
	_, r.checkpointTx = leasehold.CheckpointTx(ctx, tx, "step", 1)
	rollbackQuietly(rollback)
	_, r.checkpoint = leasehold.Checkpoint(ctx, "step", 1)
	return r, nil
}

// each calls check with each call's name and error.
func (r fencedCalls) each(check func(name string, err error)) {
	check("FenceTx", r.fence)
	check("CompleteTx", r.complete)
	check("Checkpoint", r.checkpoint)
	check("CheckpointTx", r.checkpointTx)
}

// TestFencedCallsAfterLeaseLost: once the heartbeat has found the lease
// taken over, and its handler's context ended with ErrLeaseLost, the
// fenced calls return errors matching ErrLeaseLost, not the context's
// "context canceled"; CompleteTx does so for a lease the database
// refused even with a live context.
func TestFencedCallsAfterLeaseLost(t *testing.T) {
	eachDriver(t, func(t *testing.T, d driver.Driver) {
		type result struct {
			cause        error
			calls        fencedCalls
			liveComplete error
		}
		got := make(chan result, 1)
		_, _, _ = fencedClient(t, d, time.Second, func(ctx context.Context, c *leasehold.Client, job *leasehold.Job[fencedArgs]) error {
			if err := takeOver(ctx, d, job.ID); err != nil {
				return err
			}
			select {
			case <-ctx.Done():
			case <-time.After(30 * time.Second):
			}
			var r result
			r.cause = context.Cause(ctx)
			calls, err := callFenced(ctx, d, c, job.JobRow)
			if err != nil {
				return err
			}
			r.calls = calls
			tx, _, rollback, err := fencedTx(context.Background(), d)
			if err != nil {
				return err
			}
			r.liveComplete = c.CompleteTx(context.Background(), tx, job.JobRow)
			rollbackQuietly(rollback)
			got <- r
			return ctx.Err()
		})
		r := <-got
		if !errors.Is(r.cause, leasehold.ErrLeaseLost) {
			t.Fatalf("handler's context ended with %v; want ErrLeaseLost", r.cause)
		}
		r.calls.each(func(name string, err error) {
			if !errors.Is(err, leasehold.ErrLeaseLost) {
				t.Errorf("%s after the lease was found taken over = %v; want ErrLeaseLost", name, err)
			}
		})
		if !errors.Is(r.liveComplete, leasehold.ErrLeaseLost) {
			t.Errorf("CompleteTx with a live context after the lease was found taken over = %v; want ErrLeaseLost", r.liveComplete)
		}
	})
}

// TestFencedCallsCallerCancelled: a context the caller cancelled itself,
// under a lease still held, makes the fenced calls return
// context.Canceled, not ErrLeaseLost; the lease is not lost, and the
// handler then completes the job.
func TestFencedCallsCallerCancelled(t *testing.T) {
	eachDriver(t, func(t *testing.T, d driver.Driver) {
		got := make(chan fencedCalls, 1)
		c, id, ends := fencedClient(t, d, 0, func(ctx context.Context, c *leasehold.Client, job *leasehold.Job[fencedArgs]) error {
			cctx, cancel := context.WithCancel(ctx)
			cancel()
			calls, err := callFenced(cctx, d, c, job.JobRow)
			if err != nil {
				return err
			}
			got <- calls
			return nil
		})
		(<-got).each(func(name string, err error) {
			if !errors.Is(err, context.Canceled) || errors.Is(err, leasehold.ErrLeaseLost) {
				t.Errorf("%s with a cancelled context = %v; want context.Canceled, not ErrLeaseLost", name, err)
			}
		})
		if kinds := endingsOf(t, ends, id); len(kinds) != 1 || kinds[0] != leasehold.EventFinished {
			t.Errorf("ending events %v; want one finished", kinds)
		}
		if s := c.Stats(); s.Completed != 1 {
			t.Errorf("stats: %d completed; want 1", s.Completed)
		}
	})
}
