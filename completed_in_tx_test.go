package leasehold_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// inTxArgs are the arguments of a job whose handler completes it with
// CompleteTx or not, as Mode says.
type inTxArgs struct {
	Mode string `json:"mode"`
}

func (inTxArgs) Kind() string { return "test.completed_in_tx" }

// The modes of inTxArgs.
const (
	inTxNone           = "none"            // no CompleteTx; returns nil
	inTxCommitThenFail = "commit-then-err" // CompleteTx committed; returns an error
	inTxRollbackNil    = "rollback-nil"    // CompleteTx rolled back; returns nil
)

// TestCompletedInTx: a work middleware asks CompletedInTx, once the
// handler has returned, what its CompleteTx calls came to, and the answer
// matches what the client writes: committed for a job completed in a
// transaction that committed (the handler's later error changes nothing),
// rolled back for one whose transaction rolled back (the attempt is
// charged), none for a handler that did not call CompleteTx; and none
// outside a handler.
func TestCompletedInTx(t *testing.T) {
	if got := leasehold.CompletedInTx(t.Context()); got != leasehold.TxCompletionNone {
		t.Errorf("CompletedInTx outside a handler = %v, want none", got)
	}
	eachDriver(t, testCompletedInTx)
}

func testCompletedInTx(t *testing.T, d driver.Driver) {
	ctx := t.Context()
	seen := make(chan leasehold.TxCompletion, 3)
	ws := leasehold.NewWorkers()
	if err := leasehold.AddWorker(ws, leasehold.WorkFunc[inTxArgs](func(ctx context.Context, job *leasehold.Job[inTxArgs]) error {
		if job.Args.Mode == inTxNone {
			return nil
		}
		tx, commit, rollback, err := fencedTx(ctx, d)
		if err != nil {
			return err
		}
		if err := leasehold.ClientFromContext(ctx).CompleteTx(ctx, tx, job.JobRow); err != nil {
			rollbackQuietly(rollback)
			return err
		}
		if job.Args.Mode == inTxRollbackNil {
			return rollback()
		}
		if err := commit(); err != nil {
			return err
		}
		return errors.New("error after the completion committed")
	})); err != nil {
		t.Fatal(err)
	}
	c, err := leasehold.NewClient(leasehold.Config{Driver: d, Workers: ws, PollInterval: 10 * time.Millisecond,
		DefaultMaxAttempts: 2, RetryPolicy: &leasehold.ExponentialBackoff{Base: time.Hour, Max: time.Hour},
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Queues: map[string]leasehold.QueueConfig{leasehold.DefaultQueue: {MaxWorkers: 1}},
		WorkMiddleware: []leasehold.WorkMiddleware{leasehold.WorkMiddlewareFunc(
			func(ctx context.Context, _ *leasehold.JobRow, next func(context.Context) error) error {
				err := next(ctx)
				seen <- leasehold.CompletedInTx(ctx)
				return err
			})}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mode  string
		want  leasehold.TxCompletion
		state leasehold.JobState
	}{
		{inTxNone, leasehold.TxCompletionNone, leasehold.StateCompleted},
		{inTxCommitThenFail, leasehold.TxCompletionCommitted, leasehold.StateCompleted},
		{inTxRollbackNil, leasehold.TxCompletionRolledBack, leasehold.StatePending},
	} {
		res, err := c.Insert(ctx, inTxArgs{Mode: tc.mode}, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := <-seen; got != tc.want {
			t.Errorf("%s: CompletedInTx after the handler = %v, want %v", tc.mode, got, tc.want)
		}
		job := waitAttemptEnded(t, c, res.Job.ID)
		if job.State != tc.state {
			t.Errorf("%s: job %s, want %s", tc.mode, job.State, tc.state)
		}
		if tc.mode == inTxRollbackNil {
			if last := job.Attempts[len(job.Attempts)-1]; last.Error != leasehold.ErrCompleteTxRolledBack.Error() {
				t.Errorf("%s: attempt error %q, want %q", tc.mode, last.Error, leasehold.ErrCompleteTxRolledBack)
			}
		}
	}
}

// cutOffArgs are the arguments of a job whose handler waits for its
// context to end and returns nil.
type cutOffArgs struct{}

func (cutOffArgs) Kind() string { return "test.cut_off" }

// TestShutdownIgnoresNil: a handler cut off by Stop (cause
// ErrShuttingDown) that returns nil has not completed its job, as
// ErrShuttingDown says: the job is released back to pending, its attempt
// not charged, or, in a FlagStuck queue, nothing is written and the job
// stays processing until its lease expires and the watcher flags it.
func TestShutdownIgnoresNil(t *testing.T) {
	for _, tc := range []struct {
		name  string
		queue leasehold.QueueConfig
		state leasehold.JobState
	}{
		{"plain", leasehold.QueueConfig{}, leasehold.StatePending},
		{"flagstuck", leasehold.QueueConfig{FlagStuck: true}, leasehold.StateProcessing},
	} {
		t.Run(tc.name, func(t *testing.T) {
			eachDriver(t, func(t *testing.T, d driver.Driver) {
				testShutdownIgnoresNil(t, d, tc.queue, tc.state)
			})
		})
	}
}

func testShutdownIgnoresNil(t *testing.T, d driver.Driver, q leasehold.QueueConfig, want leasehold.JobState) {
	ctx := t.Context()
	causes := make(chan error, 1)
	started := make(chan struct{})
	ws := leasehold.NewWorkers()
	if err := leasehold.AddWorker(ws, leasehold.WorkFunc[cutOffArgs](func(ctx context.Context, _ *leasehold.Job[cutOffArgs]) error {
		close(started)
		<-ctx.Done()
		causes <- context.Cause(ctx)
		return nil
	})); err != nil {
		t.Fatal(err)
	}
	c, err := leasehold.NewClient(leasehold.Config{Driver: d, Workers: ws, PollInterval: 10 * time.Millisecond,
		LeaseTTL: time.Minute, ShutdownTimeout: 50 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Queues: map[string]leasehold.QueueConfig{leasehold.DefaultQueue: q}})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Insert(ctx, cutOffArgs{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	<-started
	if err := c.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	if cause := <-causes; !errors.Is(cause, leasehold.ErrShuttingDown) {
		t.Fatalf("handler's cause %v, want ErrShuttingDown", cause)
	}
	job, err := c.GetJob(ctx, res.Job.ID)
	if err != nil {
		t.Fatal(err)
	}
	if job.State != want {
		t.Errorf("job %s after a nil returned under ErrShuttingDown, want %s", job.State, want)
	}
	if want == leasehold.StatePending {
		if last := job.Attempts[len(job.Attempts)-1]; last.Outcome != leasehold.OutcomeReleased {
			t.Errorf("last attempt %s, want released", last.Outcome)
		}
		if n := job.ChargedAttempts(); n != 0 {
			t.Errorf("%d attempts charged, want 0", n)
		}
	}
}
