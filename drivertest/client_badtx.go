package drivertest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// nilTxs returns the nil transactions a caller may pass by mistake: an
// untyped nil (a nil pgx.Tx interface becomes one), a nil *sql.Tx, and a
// nil pointer of kind's own transaction type (such as a *pgxpool.Tx).
func nilTxs(t *testing.T, d driver.Driver, kind TxKind) []any {
	t.Helper()
	tx, _, rollback := kind.Begin(t, d)
	if err := rollback(); err != nil {
		t.Fatalf("rollback: %v", err)
	}
	out := []any{nil, (*sql.Tx)(nil)}
	if typ := reflect.TypeOf(tx); typ.Kind() == reflect.Pointer {
		out = append(out, reflect.Zero(typ).Interface())
	}
	return out
}

// testNilTxRefused: CompleteTx, InsertTx and InsertMany refuse a nil or
// typed-nil transaction with ErrUnsupportedTx and write nothing: neither
// the completion nor the insert is made outside a transaction.
func testNilTxRefused(e *clientEnv) {
	for _, kind := range e.h.TxKinds {
		e.Run(kind.Name, func(t *testing.T) {
			e := &clientEnv{T: t, h: e.h, d: e.h.Open(t), ctx: e.ctx}
			nils := nilTxs(t, e.d, kind)
			var cRef atomic.Pointer[leasehold.Client]
			checked := make(chan error, 1)
			c := e.newClient(e.d, e.workers(func(ctx context.Context, job *leasehold.Job[testArgs]) error {
				checked <- e.completeNilTxs(ctx, cRef.Load(), job.JobRow, nils)
				return nil
			}), func(c *leasehold.Config) { c.LeaseTTL = 30 * time.Second })
			cRef.Store(c)
			for _, tx := range nils {
				if _, err := c.InsertTx(e.ctx, tx, testArgs{N: 1}, &leasehold.InsertOpts{Queue: "nil-tx"}); !errors.Is(err, leasehold.ErrUnsupportedTx) {
					t.Errorf("InsertTx(%T) = %v, want ErrUnsupportedTx", tx, err)
				}
				if tx == nil {
					continue // InsertMany with no transaction inserts in its own
				}
				jobs := []leasehold.InsertManyParams{{Args: testArgs{N: 1}, Opts: &leasehold.InsertOpts{Queue: "nil-tx"}}}
				if _, err := c.InsertMany(e.ctx, tx, jobs); !errors.Is(err, leasehold.ErrUnsupportedTx) {
					t.Errorf("InsertMany(%T) = %v, want ErrUnsupportedTx", tx, err)
				}
			}
			if got, err := c.ListJobs(e.ctx, &leasehold.ListParams{Queue: "nil-tx"}); err != nil || len(got) != 0 {
				t.Errorf("ListJobs after inserts with nil transactions = %d jobs, %v; want none", len(got), err)
			}
			id := e.insertOpts(c, nil)
			e.handlerCheck(checked)
			row := e.waitState(id, leasehold.StateCompleted, 30*time.Second)
			if h := e.history(id); row.Attempt != 1 || len(h) != 1 || h[0].Outcome != leasehold.OutcomeCompleted {
				t.Errorf("attempt %d history %s; want completed once by the handler's nil return", row.Attempt, fmtHistory(h))
			}
		})
	}
}

// completeNilTxs calls CompleteTx with each of nils and checks that each
// is refused and leaves the job processing under its lease.
func (e *clientEnv) completeNilTxs(ctx context.Context, c *leasehold.Client, job *leasehold.JobRow, nils []any) error {
	for _, tx := range nils {
		if err := c.CompleteTx(ctx, tx, job); !errors.Is(err, leasehold.ErrUnsupportedTx) {
			return fmt.Errorf("CompleteTx(%T) = %v, want ErrUnsupportedTx", tx, err)
		}
		if err := e.checkStillProcessing(job, c.Owner()); err != nil {
			return fmt.Errorf("CompleteTx(%T): %w", tx, err)
		}
	}
	return nil
}

// testForeignTxRefused: a transaction of a type the driver does not
// accept is refused with ErrUnsupportedTx before any other check:
// CompleteTx and ResolveReconcileTx report it for a job not running in
// the client (where a transaction it accepts gets ErrNotInHandler), and
// CheckpointTx in a handler reports it before a bad name (which is not
// made permanent then). FenceTx reports a nil transaction outside a
// handler too.
func testForeignTxRefused(e *clientEnv) {
	checked := make(chan error, 1)
	c := e.newClient(e.d, e.workers(func(ctx context.Context, job *leasehold.Job[testArgs]) error {
		checked <- foreignTxInHandler(ctx)
		return nil
	}), nil)
	res, err := c.Insert(e.ctx, testArgs{N: 1}, &leasehold.InsertOpts{Queue: "not-worked"})
	if err != nil {
		e.Fatalf("Insert: %v", err)
	}
	job := res.Job
	for _, tx := range []any{"nope", struct{}{}} {
		if err := c.CompleteTx(e.ctx, tx, job); !errors.Is(err, leasehold.ErrUnsupportedTx) || errors.Is(err, leasehold.ErrNotInHandler) {
			e.Errorf("CompleteTx(%T) outside a handler = %v, want ErrUnsupportedTx", tx, err)
		}
		r := leasehold.Resolution{Action: leasehold.ResolveComplete}
		if err := c.ResolveReconcileTx(e.ctx, tx, job, r); !errors.Is(err, leasehold.ErrUnsupportedTx) || errors.Is(err, leasehold.ErrNotInHandler) {
			e.Errorf("ResolveReconcileTx(%T) outside a handler = %v, want ErrUnsupportedTx", tx, err)
		}
	}
	if err := leasehold.FenceTx(e.ctx, nil); !errors.Is(err, leasehold.ErrUnsupportedTx) {
		e.Errorf("FenceTx(nil) outside a handler = %v, want ErrUnsupportedTx", err)
	}
	tx, _, rollback := e.h.TxKinds[0].Begin(e.T, e.d)
	err = c.CompleteTx(e.ctx, tx, job)
	if rbErr := rollback(); rbErr != nil {
		e.Fatalf("rollback: %v", rbErr)
	}
	if !errors.Is(err, leasehold.ErrNotInHandler) {
		e.Errorf("CompleteTx(%T) of a job not running = %v, want ErrNotInHandler", tx, err)
	}
	id := e.insertOpts(c, nil)
	e.handlerCheck(checked)
	e.waitState(id, leasehold.StateCompleted, 30*time.Second)
}

// foreignTxInHandler checks, in a handler, that CheckpointTx and FenceTx
// refuse a foreign transaction with ErrUnsupportedTx, the checkpoint's
// before its bad name.
func foreignTxInHandler(ctx context.Context) error {
	_, err := leasehold.CheckpointTx(ctx, "nope", "bad name", nil)
	var perm *leasehold.PermanentError
	if !errors.Is(err, leasehold.ErrUnsupportedTx) || errors.Is(err, leasehold.ErrInvalidArgs) || errors.As(err, &perm) {
		return fmt.Errorf("CheckpointTx(string) with a bad name = %v, want ErrUnsupportedTx alone", err)
	}
	if err := leasehold.FenceTx(ctx, "nope"); !errors.Is(err, leasehold.ErrUnsupportedTx) {
		return fmt.Errorf("FenceTx(string) = %v, want ErrUnsupportedTx", err)
	}
	return nil
}

// testSecondCompleteTxSameTx: a second CompleteTx of one lease in the same
// transaction is ErrAlreadyCompleted, not ErrLeaseLost, and neither loses
// the lease nor counts a refused write; after that transaction rolls back,
// a CompleteTx in a new transaction completes the job.
func testSecondCompleteTxSameTx(e *clientEnv) {
	for _, kind := range e.h.TxKinds {
		e.Run(kind.Name, func(t *testing.T) {
			e := &clientEnv{T: t, h: e.h, d: e.h.Open(t), ctx: e.ctx}
			var cRef atomic.Pointer[leasehold.Client]
			checked := make(chan error, 1)
			c := e.newClient(e.d, e.workers(func(ctx context.Context, job *leasehold.Job[testArgs]) error {
				err := completeTwiceThenAgain(ctx, cRef.Load(), kind, t, e.d, job.JobRow)
				checked <- err
				return err
			}), func(c *leasehold.Config) { c.LeaseTTL = 30 * time.Second })
			cRef.Store(c)
			id := e.insertOpts(c, nil)
			e.handlerCheck(checked)
			row := e.waitState(id, leasehold.StateCompleted, 30*time.Second)
			if h := e.history(id); row.Attempt != 1 || len(h) != 1 || h[0].Outcome != leasehold.OutcomeCompleted {
				t.Errorf("attempt %d history %s; want completed in the first attempt", row.Attempt, fmtHistory(h))
			}
			e.waitFor("the outcome to be accounted", 10*time.Second, func() bool {
				s := c.Stats()
				return s.Completed+s.FinishRefused >= 1
			})
			if s := c.Stats(); s.FinishRefused != 0 || s.LeaseLost != 0 || s.Completed != 1 {
				t.Errorf("stats: %d refused writes, %d leases lost, %d completed; want 0, 0, 1", s.FinishRefused, s.LeaseLost, s.Completed)
			}
		})
	}
}

// completeTwiceThenAgain completes job twice in one transaction (the
// second must be ErrAlreadyCompleted), rolls it back, then completes it
// in a new transaction and commits.
func completeTwiceThenAgain(ctx context.Context, c *leasehold.Client, kind TxKind, t *testing.T, d driver.Driver, job *leasehold.JobRow) error {
	tx, _, rollback := kind.Begin(t, d)
	if err := c.CompleteTx(ctx, tx, job); err != nil {
		_ = rollback()
		return fmt.Errorf("first CompleteTx: %w", err)
	}
	err := c.CompleteTx(ctx, tx, job)
	if rbErr := rollback(); rbErr != nil {
		return fmt.Errorf("rollback: %w", rbErr)
	}
	if !errors.Is(err, leasehold.ErrAlreadyCompleted) || errors.Is(err, leasehold.ErrLeaseLost) {
		return fmt.Errorf("second CompleteTx in the same transaction = %v, want ErrAlreadyCompleted and not ErrLeaseLost", err)
	}
	if err := leasehold.CheckLease(ctx); err != nil {
		return fmt.Errorf("lease after the refused second CompleteTx: %w", err)
	}
	tx, commit, rollback := kind.Begin(t, d)
	if err := c.CompleteTx(ctx, tx, job); err != nil {
		_ = rollback()
		return fmt.Errorf("CompleteTx in a new transaction after a rollback: %w", err)
	}
	return commit()
}

// testCompletedTxThenHandlerError: a handler that completes its job in a
// transaction that commits, then returns an error, leaves the job
// completed; the follow-up write the fence refuses is expected, not a
// refused late write.
func testCompletedTxThenHandlerError(e *clientEnv) {
	for _, kind := range e.h.TxKinds {
		e.Run(kind.Name, func(t *testing.T) {
			e := &clientEnv{T: t, h: e.h, d: e.h.Open(t), ctx: e.ctx}
			var cRef atomic.Pointer[leasehold.Client]
			returned := make(chan struct{})
			c := e.newClient(e.d, e.workers(func(ctx context.Context, job *leasehold.Job[testArgs]) error {
				defer close(returned)
				tx, commit, rollback := kind.Begin(t, e.d)
				if err := cRef.Load().CompleteTx(ctx, tx, job.JobRow); err != nil {
					_ = rollback()
					return err
				}
				if err := commit(); err != nil {
					return err
				}
				return errors.New("test: handler fails after its transaction committed")
			}), func(c *leasehold.Config) { c.LeaseTTL = 30 * time.Second; c.RetryPolicy = fixedRetry(0) })
			cRef.Store(c)
			id := e.insertOpts(c, &leasehold.InsertOpts{MaxAttempts: 3})
			e.waitGate(returned, "the handler to return")
			e.waitFor("the outcome to be accounted", 10*time.Second, func() bool {
				s := c.Stats()
				return s.Completed+s.FinishRefused+s.LeaseLost >= 1
			})
			row, err := e.d.GetJob(e.ctx, id)
			if err != nil {
				t.Fatalf("GetJob: %v", err)
			}
			if h := e.history(id); row.State != leasehold.StateCompleted || len(h) != 1 || h[0].Outcome != leasehold.OutcomeCompleted {
				t.Errorf("state %s history %s; want completed once", row.State, fmtHistory(h))
			}
			if s := c.Stats(); s.FinishRefused != 0 {
				t.Errorf("stats: %d refused writes; want 0 (the refused follow-up of a committed CompleteTx is expected)", s.FinishRefused)
			}
		})
	}
}

// handlerCheck waits for a handler's check and fails the test at once if
// it failed.
func (e *clientEnv) handlerCheck(results <-chan error) {
	e.Helper()
	select {
	case err := <-results:
		if err != nil {
			e.Fatalf("in the handler: %v", err)
		}
	case <-time.After(30 * time.Second):
		e.Fatalf("timed out waiting for the handler's check")
	}
}
