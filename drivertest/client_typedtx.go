package drivertest

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// typedKinds runs fn for each transaction kind with a typed completion
// function, each in a subtest with a fresh database.
func (e *clientEnv) typedKinds(fn func(e *clientEnv, kind TxKind)) {
	for _, kind := range e.h.TxKinds {
		e.Run(kind.Name, func(t *testing.T) {
			if kind.Complete == nil {
				t.Skipf("TxKind %s has no Complete function", kind.Name)
			}
			fn(&clientEnv{T: t, h: e.h, d: e.h.Open(t), ctx: e.ctx}, kind)
		})
	}
}

// testTypedCompleteTx: a handler completes its job with the driver's typed
// function, which finds the client in the handler's context (no client
// variable captured), in the same transaction as a business write: both
// commit. The same function refuses a context that is not a running
// handler's (ErrNotInHandler) and a nil transaction (ErrUnsupportedTx).
func testTypedCompleteTx(e *clientEnv) {
	e.typedKinds(func(e *clientEnv, kind TxKind) {
		checked := make(chan error, 1)
		var business int64
		ws := e.workers(func(ctx context.Context, job *leasehold.Job[testArgs]) error {
			id, err := e.completeTyped(ctx, kind, job.JobRow)
			business = id
			checked <- err
			return err
		})
		c := e.newClient(e.d, ws, func(c *leasehold.Config) { c.LeaseTTL = 30 * time.Second })
		id := e.insertOpts(c, nil)
		e.handlerCheck(checked)
		row := e.waitState(id, leasehold.StateCompleted, 30*time.Second)
		if h := e.history(id); row.Attempt != 1 || len(h) != 1 || h[0].Outcome != leasehold.OutcomeCompleted {
			e.Errorf("attempt %d history %s; want completed in the first attempt", row.Attempt, fmtHistory(h))
		}
		if _, err := e.d.GetJob(e.ctx, business); err != nil {
			e.Errorf("the business write committed with the completion: GetJob(%d) = %v", business, err)
		}
	})
}

// completeTyped makes a business write (a job inserted in tx) and
// completes row's job in the same transaction with kind's typed function, after
// checking that the function refuses a foreign context and a nil tx. It
// returns the business job's id.
func (e *clientEnv) completeTyped(ctx context.Context, kind TxKind, row *leasehold.JobRow) (int64, error) {
	tx, commit, rollback := kind.Begin(e.T, e.d)
	res, err := e.d.Insert(ctx, tx, []*driver.InsertParams{job("business", "ledger")})
	if err != nil {
		_ = rollback()
		return 0, fmt.Errorf("business write: %w", err)
	}
	if err := kind.Complete(context.Background(), tx, row); !errors.Is(err, leasehold.ErrNotInHandler) {
		_ = rollback()
		return 0, fmt.Errorf("typed completion with a context from outside any handler = %v, want ErrNotInHandler", err)
	}
	if err := kind.Complete(ctx, nil, row); !errors.Is(err, leasehold.ErrUnsupportedTx) {
		_ = rollback()
		return 0, fmt.Errorf("typed completion with a nil transaction = %v, want ErrUnsupportedTx", err)
	}
	if err := kind.Complete(ctx, tx, row); err != nil {
		_ = rollback()
		return 0, fmt.Errorf("typed completion: %w", err)
	}
	return res[0].Job.ID, commit()
}

// testTypedCompleteTxOtherDriver: under a client whose driver is not the
// typed function's own (here a wrapper around it), the typed completion
// is refused with ErrUnsupportedTx and writes nothing: the job stays
// processing under its lease, and the handler's nil return completes it.
func testTypedCompleteTxOtherDriver(e *clientEnv) {
	e.typedKinds(func(e *clientEnv, kind TxKind) {
		checked := make(chan error, 1)
		ws := e.workers(func(ctx context.Context, job *leasehold.Job[testArgs]) error {
			checked <- e.completeRefused(ctx, kind, job.JobRow)
			return nil
		})
		c := e.newClient(&faultDriver{Driver: e.d}, ws, func(c *leasehold.Config) { c.LeaseTTL = 30 * time.Second })
		id := e.insertOpts(c, nil)
		e.handlerCheck(checked)
		row := e.waitState(id, leasehold.StateCompleted, 30*time.Second)
		if h := e.history(id); row.Attempt != 1 || len(h) != 1 || h[0].Outcome != leasehold.OutcomeCompleted {
			e.Errorf("attempt %d history %s; want completed once by the handler's nil return", row.Attempt, fmtHistory(h))
		}
	})
}

// completeRefused checks that kind's typed completion of job is refused
// under the handler's client, and that the job is still processing.
func (e *clientEnv) completeRefused(ctx context.Context, kind TxKind, job *leasehold.JobRow) error {
	tx, _, rollback := kind.Begin(e.T, e.d)
	err := kind.Complete(ctx, tx, job)
	if rbErr := rollback(); rbErr != nil {
		return fmt.Errorf("rollback: %w", rbErr)
	}
	if !errors.Is(err, leasehold.ErrUnsupportedTx) {
		return fmt.Errorf("typed completion under a client of another driver = %v, want ErrUnsupportedTx", err)
	}
	return e.checkStillProcessing(job, leasehold.ClientFromContext(ctx).Owner())
}
