package drivertest

import (
	"context"
	"time"

	"github.com/leasehold/leasehold"
)

// testHeldRowHoldsBackOnlyItsLease: one handler holds its job's row in a
// business transaction (FenceTx) for four TTLs, beside a long handler of
// the same client. The held row keeps only its own lease
// from being renewed: that handler is stopped and its job retried, while
// the other lease stays renewed and its job completes in one attempt.
// Drivers whose caller transactions hold the whole database (SQLite's
// write lock) hold back every write of the process instead, as they
// document; they skip this test.
func testHeldRowHoldsBackOnlyItsLease(e *clientEnv) {
	if !e.h.RowLocks || len(e.h.TxKinds) == 0 {
		e.Skip("the harness's caller transactions do not lock single rows")
	}
	// Two seconds rather than one: the other lease must be renewed at
	// every heartbeat for the whole run, and on a loaded machine a
	// heartbeat statement can take longer than a one-second lease's
	// safe window allows.
	const ttl = 2 * time.Second
	held := make(chan error, 1)
	c := e.newClient(e.d, e.workers(func(ctx context.Context, job *leasehold.Job[testArgs]) error {
		if job.Args.N == 2 || job.Attempt > 1 {
			return sleepCtx(ctx, 3*ttl) // several heartbeats while the other row is held
		}
		tx, _, rollback := e.h.TxKinds[0].Begin(e.T, e.d)
		if err := leasehold.FenceTx(ctx, tx); err != nil {
			held <- err
			_ = rollback()
			return err
		}
		held <- nil
		// An outside call inside the transaction that stalls past the
		// lease's safe window, deaf to ctx.
		time.Sleep(4 * ttl)
		_ = rollback()
		return ctx.Err()
	}), func(c *leasehold.Config) { c.LeaseTTL = ttl })
	holder := e.insertArgs(c, 1)
	if err := <-held; err != nil {
		e.Fatalf("FenceTx: %v", err)
	}
	other := e.insertArgs(c, 2)
	e.waitState(other, leasehold.StateCompleted, 30*time.Second)
	if h := e.history(other); len(h) != 1 || h[0].Outcome != leasehold.OutcomeCompleted {
		e.Fatalf("job beside the held row: history %s; want one completed attempt (its lease renewed throughout)", fmtHistory(h))
	}
	e.waitState(holder, leasehold.StateCompleted, 30*time.Second)
	if h := e.history(holder); len(h) != 2 || h[0].Outcome == leasehold.OutcomeCompleted {
		e.Fatalf("job whose row its handler held: history %s; want a first attempt not completed, then a completed one", fmtHistory(h))
	}
}

// sleepCtx sleeps for d, or returns ctx's error when it ends first.
func sleepCtx(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}
