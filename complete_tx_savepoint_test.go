package leasehold_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/pgdriver"
	"github.com/leasehold/leasehold/pgdriver/pgtest"
)

// The savepoint tests run on PostgreSQL only: a pgx savepoint is a pgx.Tx
// of its own, another object of the same transaction. SQLite's *sql.Tx
// has no nested transaction object (a savepoint there is SQL run in the
// same *sql.Tx).

// savepointEffects creates the business table the savepoint tests write
// one row to per handler run, in the transaction that completes the job.
func savepointEffects(t *testing.T, d *pgdriver.Driver) {
	t.Helper()
	if _, err := d.Pool().Exec(t.Context(), `CREATE TABLE savepoint_effects (job_id bigint NOT NULL)`); err != nil {
		t.Fatal(err)
	}
}

// effectsOf returns how many business rows job id's runs committed.
func effectsOf(t *testing.T, d *pgdriver.Driver, id int64) int {
	t.Helper()
	var n int
	if err := d.Pool().QueryRow(t.Context(), `SELECT count(*) FROM savepoint_effects WHERE job_id = $1`, id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// inBusinessTx runs body in a pgx transaction that first writes job's
// business row, and commits it when body returns nil.
func inBusinessTx(ctx context.Context, d *pgdriver.Driver, job *leasehold.JobRow, body func(tx pgx.Tx) error) error {
	tx, err := d.Pool().Begin(ctx)
	if err != nil {
		return err
	}
	defer rollbackQuietly(func() error { return tx.Rollback(context.Background()) })
	if _, err := tx.Exec(ctx, `INSERT INTO savepoint_effects (job_id) VALUES ($1)`, job.ID); err != nil {
		return err
	}
	if err := body(tx); err != nil {
		return err
	}
	return tx.Commit(ctx)
}

// twiceInSavepoint is one way for a handler to call CompleteTx twice for
// its lease in one transaction, once through a savepoint of it: run
// returns the second call's error, and an error of its own when anything
// else failed.
type twiceInSavepoint struct {
	name string
	run  func(ctx context.Context, c *leasehold.Client, tx pgx.Tx, job *leasehold.JobRow) (second, err error)
}

var twiceInSavepointCases = []twiceInSavepoint{
	{"savepoint released then tx", func(ctx context.Context, c *leasehold.Client, tx pgx.Tx, job *leasehold.JobRow) (error, error) {
		sp, err := tx.Begin(ctx)
		if err != nil {
			return nil, err
		}
		if err := c.CompleteTx(ctx, sp, job); err != nil {
			return nil, fmt.Errorf("CompleteTx in the savepoint: %w", err)
		}
		if err := sp.Commit(ctx); err != nil {
			return nil, err
		}
		return c.CompleteTx(ctx, tx, job), nil
	}},
	{"savepoint open then tx", func(ctx context.Context, c *leasehold.Client, tx pgx.Tx, job *leasehold.JobRow) (error, error) {
		sp, err := tx.Begin(ctx)
		if err != nil {
			return nil, err
		}
		if err := c.CompleteTx(ctx, sp, job); err != nil {
			return nil, fmt.Errorf("CompleteTx in the savepoint: %w", err)
		}
		second := c.CompleteTx(ctx, tx, job)
		return second, sp.Commit(ctx)
	}},
	{"tx then savepoint rolled back", func(ctx context.Context, c *leasehold.Client, tx pgx.Tx, job *leasehold.JobRow) (error, error) {
		if err := c.CompleteTx(ctx, tx, job); err != nil {
			return nil, fmt.Errorf("CompleteTx in the transaction: %w", err)
		}
		sp, err := tx.Begin(ctx)
		if err != nil {
			return nil, err
		}
		second := c.CompleteTx(ctx, sp, job)
		// The savepoint's rollback leaves the transaction's completion.
		return second, sp.Rollback(ctx)
	}},
}

// TestCompleteTxTwiceThroughSavepoint: a second CompleteTx of one lease
// in the same transaction, one of the two calls through a pgx savepoint
// of it, is ErrAlreadyCompleted, not ErrLeaseLost: the lease is still
// held, and the handler that then commits completes the job once, in one
// event, counted completed, with no refused write.
func TestCompleteTxTwiceThroughSavepoint(t *testing.T) {
	for _, tc := range twiceInSavepointCases {
		t.Run(tc.name, func(t *testing.T) {
			d := pgtest.Open(t)
			savepointEffects(t, d)
			type result struct{ second, lease error }
			got := make(chan result, 1)
			c, id, ends := fencedClient(t, d, time.Minute, func(ctx context.Context, c *leasehold.Client, job *leasehold.Job[fencedArgs]) error {
				var r result
				err := inBusinessTx(ctx, d, job.JobRow, func(tx pgx.Tx) error {
					second, err := tc.run(ctx, c, tx, job.JobRow)
					r = result{second: second, lease: leasehold.CheckLease(ctx)}
					return err
				})
				got <- r
				return err
			})
			kinds := endingsOf(t, ends, id)
			r := <-got
			t.Logf("second CompleteTx: %v", r.second)
			if !errors.Is(r.second, leasehold.ErrAlreadyCompleted) || errors.Is(r.second, leasehold.ErrLeaseLost) {
				t.Errorf("second CompleteTx = %v; want ErrAlreadyCompleted, not ErrLeaseLost", r.second)
			}
			if r.lease != nil {
				t.Errorf("CheckLease after the second CompleteTx = %v; want the lease held", r.lease)
			}
			checkCompletedOnce(t, d, c, id, kinds)
		})
	}
}

// TestCompleteTxSavepointRolledBackThenTx: a CompleteTx in a savepoint
// that is rolled back leaves the job as it was, and a CompleteTx in the
// transaction then completes it (its fence matches again).
func TestCompleteTxSavepointRolledBackThenTx(t *testing.T) {
	d := pgtest.Open(t)
	savepointEffects(t, d)
	got := make(chan error, 1)
	c, id, ends := fencedClient(t, d, time.Minute, func(ctx context.Context, c *leasehold.Client, job *leasehold.Job[fencedArgs]) error {
		err := inBusinessTx(ctx, d, job.JobRow, func(tx pgx.Tx) error {
			sp, err := tx.Begin(ctx)
			if err != nil {
				return err
			}
			if err := c.CompleteTx(ctx, sp, job.JobRow); err != nil {
				return fmt.Errorf("CompleteTx in the savepoint: %w", err)
			}
			if err := sp.Rollback(ctx); err != nil {
				return err
			}
			return c.CompleteTx(ctx, tx, job.JobRow)
		})
		got <- err
		return err
	})
	kinds := endingsOf(t, ends, id)
	if err := <-got; err != nil {
		t.Errorf("CompleteTx in the transaction after its savepoint rolled back: %v; want nil", err)
	}
	checkCompletedOnce(t, d, c, id, kinds)
}

// TestCompleteTxSavepointUndoneThenTakenOver: a lease whose completion in
// a savepoint was rolled back, and whose job another worker then took
// over, is lost: the CompleteTx in the transaction is ErrLeaseLost, the
// attempt's one event a refused write, and the job the other worker's.
func TestCompleteTxSavepointUndoneThenTakenOver(t *testing.T) {
	d := pgtest.Open(t)
	savepointEffects(t, d)
	got := make(chan error, 1)
	c, id, ends := fencedClient(t, d, time.Minute, func(ctx context.Context, c *leasehold.Client, job *leasehold.Job[fencedArgs]) error {
		err := inBusinessTx(ctx, d, job.JobRow, func(tx pgx.Tx) error {
			sp, err := tx.Begin(ctx)
			if err != nil {
				return err
			}
			if err := c.CompleteTx(ctx, sp, job.JobRow); err != nil {
				return fmt.Errorf("CompleteTx in the savepoint: %w", err)
			}
			if err := sp.Rollback(ctx); err != nil {
				return err
			}
			if err := expireAndTakeOver(ctx, d, job.JobRow); err != nil {
				return err
			}
			return c.CompleteTx(ctx, tx, job.JobRow)
		})
		got <- err
		return nil
	})
	kinds := endingsOf(t, ends, id)
	if err := <-got; !errors.Is(err, leasehold.ErrLeaseLost) || errors.Is(err, leasehold.ErrAlreadyCompleted) {
		t.Errorf("CompleteTx after the job was taken over = %v; want ErrLeaseLost", err)
	}
	if len(kinds) != 1 || kinds[0] != leasehold.EventFenceRefused {
		t.Errorf("ending events %v; want one fence_refused", kinds)
	}
	if s := c.Stats(); s.FinishRefused != 1 || s.Completed != 0 {
		t.Errorf("stats: %d refused, %d completed; want 1, 0", s.FinishRefused, s.Completed)
	}
	row, err := d.GetJob(t.Context(), id)
	if err != nil || row.State != leasehold.StateProcessing || row.LeaseOwner != "thief" {
		t.Errorf("job after: %+v, %v; want processing under thief", row, err)
	}
	if n := effectsOf(t, d, id); n != 0 {
		t.Errorf("%d business rows committed; want 0", n)
	}
}

// expireAndTakeOver ends job's lease in the database and has another
// worker, "thief", claim the job over it, as a takeover of an expired
// lease does (the taken-over attempt's history row records its owner
// and the lease's expiry).
func expireAndTakeOver(ctx context.Context, d *pgdriver.Driver, job *leasehold.JobRow) error {
	if _, err := d.Pool().Exec(ctx, `UPDATE leasehold_jobs SET lease_until = now() - interval '1 second' WHERE id = $1`, job.ID); err != nil {
		return err
	}
	claimed, err := d.Claim(ctx, &driver.ClaimParams{Queue: job.Queue, Kinds: []string{job.Kind},
		Owner: "thief", TTL: time.Minute, Limit: 1, TakeOver: true})
	if err != nil {
		return err
	}
	if len(claimed) != 1 || claimed[0].ID != job.ID {
		return fmt.Errorf("takeover claimed %d jobs; want job %d", len(claimed), job.ID)
	}
	return nil
}

// checkCompletedOnce checks that job id completed in its first attempt,
// with one business row, one EventFinished among kinds, and the stats of
// one completion, no refused write and no lease lost.
func checkCompletedOnce(t *testing.T, d *pgdriver.Driver, c *leasehold.Client, id int64, kinds []leasehold.EventKind) {
	t.Helper()
	if len(kinds) != 1 || kinds[0] != leasehold.EventFinished {
		t.Errorf("ending events %v; want one finished", kinds)
	}
	if s := c.Stats(); s.Completed != 1 || s.FinishRefused != 0 || s.LeaseLost != 0 {
		t.Errorf("stats: %d completed, %d refused, %d leases lost; want 1, 0, 0", s.Completed, s.FinishRefused, s.LeaseLost)
	}
	info, err := c.GetJob(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if info.State != leasehold.StateCompleted || info.Attempt != 1 || len(info.Attempts) != 1 ||
		info.Attempts[0].Outcome != leasehold.OutcomeCompleted {
		t.Errorf("job %s at attempt %d, %d attempts; want completed in its first attempt", info.State, info.Attempt, len(info.Attempts))
	}
	if n := effectsOf(t, d, id); n != 1 {
		t.Errorf("%d business rows committed; want 1", n)
	}
}

// abortingReader is a PostgreSQL driver whose reads in a caller's
// transaction find it aborted: it fails a statement in the transaction
// first, as an earlier error of the caller's would have.
type abortingReader struct{ *pgdriver.Driver }

// EndedAttemptsTx implements driver.TxEndedReader on an aborted tx.
func (d abortingReader) EndedAttemptsTx(ctx context.Context, tx any, leases []driver.LeaseRef) ([]driver.EndedAttempt, error) {
	if pt, ok := tx.(pgx.Tx); ok {
		_, _ = pt.Exec(ctx, `SELECT 1/0`)
	}
	return d.Driver.EndedAttemptsTx(ctx, tx, leases)
}

// TestCompleteTxTakenOverReadInAbortedTx: when the read of the history in
// the caller's transaction fails (the transaction aborted, SQLSTATE
// 25P02), CompleteTx decides as without it: a lease whose job another
// worker took over is still ErrLeaseLost, never taken for completed.
func TestCompleteTxTakenOverReadInAbortedTx(t *testing.T) {
	pd := pgtest.Open(t)
	savepointEffects(t, pd)
	got := make(chan error, 1)
	_, id, ends := fencedClient(t, abortingReader{pd}, time.Minute, func(ctx context.Context, c *leasehold.Client, job *leasehold.Job[fencedArgs]) error {
		err := inBusinessTx(ctx, pd, job.JobRow, func(tx pgx.Tx) error {
			sp, err := tx.Begin(ctx)
			if err != nil {
				return err
			}
			if err := c.CompleteTx(ctx, sp, job.JobRow); err != nil {
				return fmt.Errorf("CompleteTx in the savepoint: %w", err)
			}
			if err := sp.Rollback(ctx); err != nil {
				return err
			}
			if err := expireAndTakeOver(ctx, pd, job.JobRow); err != nil {
				return err
			}
			return c.CompleteTx(ctx, tx, job.JobRow)
		})
		got <- err
		return nil
	})
	kinds := endingsOf(t, ends, id)
	if err := <-got; !errors.Is(err, leasehold.ErrLeaseLost) || errors.Is(err, leasehold.ErrAlreadyCompleted) {
		t.Errorf("CompleteTx after the job was taken over, its read in tx failing = %v; want ErrLeaseLost", err)
	}
	if len(kinds) != 1 || kinds[0] != leasehold.EventFenceRefused {
		t.Errorf("ending events %v; want one fence_refused", kinds)
	}
}
