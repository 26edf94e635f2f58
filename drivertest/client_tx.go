package drivertest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
)

// testInsertTxRollback: a job inserted in a rolled-back transaction does
// not exist; one inserted in a committed transaction does.
func testInsertTxRollback(e *clientEnv) {
	c := e.newClient(e.d, nil, nil)
	for _, kind := range e.h.TxKinds {
		e.Run(kind.Name, func(t *testing.T) {
			tx, _, rollback := kind.Begin(t, e.d)
			res, err := c.InsertTx(e.ctx, tx, testArgs{N: 1}, nil)
			if err != nil {
				t.Fatalf("InsertTx: %v", err)
			}
			if err := rollback(); err != nil {
				t.Fatalf("rollback: %v", err)
			}
			if _, err := c.GetJob(e.ctx, res.Job.ID); !errors.Is(err, leasehold.ErrJobNotFound) {
				t.Fatalf("GetJob after rollback = %v, want ErrJobNotFound", err)
			}
			tx, commit, _ := kind.Begin(t, e.d)
			res, err = c.InsertTx(e.ctx, tx, testArgs{N: 2}, nil)
			if err != nil {
				t.Fatalf("InsertTx: %v", err)
			}
			if err := commit(); err != nil {
				t.Fatalf("commit: %v", err)
			}
			if j, err := c.GetJob(e.ctx, res.Job.ID); err != nil || j.State != leasehold.StatePending {
				t.Fatalf("GetJob after commit = %+v, %v; want pending", j, err)
			}
		})
	}
	if _, err := c.InsertTx(e.ctx, struct{}{}, testArgs{}, nil); !errors.Is(err, leasehold.ErrUnsupportedTx) {
		e.Fatalf("InsertTx with a bad tx = %v, want ErrUnsupportedTx", err)
	}
}

// testCompleteTx: CompleteTx in a rolled-back transaction leaves the job
// processing under the same lease (and the job is retried); in a committed
// one it completes the job.
func testCompleteTx(e *clientEnv) {
	for _, kind := range e.h.TxKinds {
		e.Run(kind.Name, func(t *testing.T) {
			e := &clientEnv{T: t, h: e.h, d: e.h.Open(t), ctx: e.ctx}
			var cRef atomic.Pointer[leasehold.Client]
			checked := make(chan error, 1)
			committed := make(chan struct{}) // closed when the second attempt's handler returns
			c := e.newClient(e.d, e.workers(func(ctx context.Context, job *leasehold.Job[testArgs]) error {
				if job.Attempt == 2 {
					defer close(committed)
				}
				tx, commit, rollback := kind.Begin(t, e.d)
				if err := cRef.Load().CompleteTx(ctx, tx, job.JobRow); err != nil {
					_ = rollback()
					return err
				}
				if job.Attempt == 2 {
					return commit()
				}
				if err := rollback(); err != nil {
					return err
				}
				checked <- e.checkStillProcessing(job.JobRow, cRef.Load().Owner())
				return nil
			}), func(c *leasehold.Config) {
				c.RetryPolicy = fixedRetry(0)
			})
			cRef.Store(c)
			res, err := c.Insert(e.ctx, testArgs{N: 1}, nil)
			if err != nil {
				t.Fatalf("Insert: %v", err)
			}
			e.waitGate(chanDone(checked, t), "the handler's check")
			row := e.waitState(res.Job.ID, leasehold.StateCompleted, 30*time.Second)
			// The commit is visible before the handler's Commit call returns:
			// wait for it, so the cleanup's rollback never races it.
			e.waitGate(committed, "the committing handler to return")
			h := e.history(row.ID)
			if row.Attempt != 2 || len(h) != 2 || h[0].Outcome != leasehold.OutcomeRetried ||
				h[1].Outcome != leasehold.OutcomeCompleted {
				t.Fatalf("attempt %d history %s; want retried then completed in tx", row.Attempt, fmtHistory(h))
			}
		})
	}
}

// checkStillProcessing reports whether job is still processing under the
// same lease after its CompleteTx rolled back.
func (e *clientEnv) checkStillProcessing(job *leasehold.JobRow, owner string) error {
	row, err := e.d.GetJob(context.Background(), job.ID)
	if err != nil {
		return err
	}
	if row.State != leasehold.StateProcessing || row.LeaseOwner != owner || row.Attempt != job.Attempt {
		return fmt.Errorf("after rolled-back CompleteTx: state %s owner %q attempt %d; want processing, %q, %d",
			row.State, row.LeaseOwner, row.Attempt, owner, job.Attempt)
	}
	return nil
}

// chanDone turns the handler's check result into a closed channel,
// failing t if the check failed.
func chanDone(results <-chan error, t *testing.T) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case err := <-results:
			if err != nil {
				t.Error(err)
			}
		case <-time.After(30 * time.Second):
		}
	}()
	return done
}

// fixedRetry is a RetryPolicy with a constant delay.
type fixedRetry time.Duration

// NextRetry implements leasehold.RetryPolicy.
func (f fixedRetry) NextRetry(*leasehold.JobRow, error) time.Duration { return time.Duration(f) }

// fmtHistory renders a history for failure messages.
func fmtHistory(h []*leasehold.Attempt) string {
	parts := make([]string, len(h))
	for i, a := range h {
		msg := a.Error
		if len(msg) > 200 {
			msg = fmt.Sprintf("%s… (%d bytes)", msg[:200], len(msg))
		}
		parts[i] = fmt.Sprintf("#%d %s by %s (%q)", a.Attempt, a.Outcome, a.Owner, msg)
	}
	return "[" + strings.Join(parts, "; ") + "]"
}

// rolledBackRetryDelay is the retry policy's delay in
// testRolledBackCompleteTxChargesBudget: distinct from every default, so
// the gap between attempts shows that the policy was asked.
const rolledBackRetryDelay = 300 * time.Millisecond

// testRolledBackCompleteTxChargesBudget: a handler that completes its job
// with CompleteTx, rolls the transaction back and returns nil has not
// finished the job. The attempt is charged to the retry budget like a
// handler error: the next attempt waits the retry policy's delay, and the
// job fails once its budget is spent.
func testRolledBackCompleteTxChargesBudget(e *clientEnv) {
	for _, kind := range e.h.TxKinds {
		e.Run(kind.Name, func(t *testing.T) {
			e := &clientEnv{T: t, h: e.h, d: e.h.Open(t), ctx: e.ctx}
			var cRef atomic.Pointer[leasehold.Client]
			var calls atomic.Int32
			c := e.newClient(e.d, e.workers(func(ctx context.Context, job *leasehold.Job[testArgs]) error {
				if calls.Add(1) > 2 {
					// Over budget: end the job without opening more transactions.
					return leasehold.Permanent(errors.New("test: attempt beyond the retry budget"))
				}
				tx, _, rollback := kind.Begin(t, e.d)
				if err := cRef.Load().CompleteTx(ctx, tx, job.JobRow); err != nil {
					_ = rollback()
					return err
				}
				return rollback()
			}), func(c *leasehold.Config) { c.RetryPolicy = fixedRetry(rolledBackRetryDelay) })
			cRef.Store(c)
			id := e.insertOpts(c, &leasehold.InsertOpts{MaxAttempts: 2})
			row := e.waitState(id, leasehold.StateFailed, 30*time.Second)
			h := e.history(id)
			if row.Attempt != 2 || len(h) != 2 || h[0].Outcome != leasehold.OutcomeRetried ||
				h[1].Outcome != leasehold.OutcomeFailed || calls.Load() != 2 {
				t.Fatalf("state %s attempt %d, %d handler calls, history %s; want failed after 2 attempts (retried, failed)",
					row.State, row.Attempt, calls.Load(), fmtHistory(h))
			}
			if !strings.Contains(h[1].Error, "did not commit") || row.LastError != h[1].Error {
				t.Errorf("last error %q, attempt error %q; want the uncommitted CompleteTx named", row.LastError, h[1].Error)
			}
			if gap := h[1].ClaimedAt.Sub(h[0].EndedAt); gap < rolledBackRetryDelay-slack {
				t.Errorf("attempt 2 claimed %v after attempt 1 ended; want the retry policy's %v", gap, rolledBackRetryDelay)
			}
		})
	}
}
