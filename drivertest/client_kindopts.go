package drivertest

import (
	"context"
	"errors"
	"strings"
	"sync"
	"time"

	"github.com/leasehold/leasehold"
)

// kindWorkers registers fn for the "test" kind with opts, and a worker
// that always fails for the "other" kind with the client's defaults.
func (e *clientEnv) kindWorkers(opts leasehold.WorkerOptions, fn func(ctx context.Context, job *leasehold.Job[testArgs]) error) *leasehold.Workers {
	e.Helper()
	ws := leasehold.NewWorkers()
	if err := leasehold.AddWorkerWithOptions(ws, leasehold.WorkFunc[testArgs](fn), opts); err != nil {
		e.Fatalf("AddWorkerWithOptions: %v", err)
	}
	fail := func(context.Context, *leasehold.Job[otherArgs]) error { return errors.New("always fails") }
	if err := leasehold.AddWorker(ws, leasehold.WorkFunc[otherArgs](fail)); err != nil {
		e.Fatalf("AddWorker: %v", err)
	}
	return ws
}

// testKindTimeout: a handler that runs past its kind's timeout (longer
// than the lease TTL, so heartbeats must keep the lease meanwhile) has its
// context cancelled with cause ErrJobTimeout; its attempt ends retried,
// not lost, with "timed out after" on the attempt row and a
// *TimeoutError matching ErrJobTimeout for the work middleware; the next
// attempt, within the timeout, completes.
func testKindTimeout(e *clientEnv) {
	const timeout = 2500 * time.Millisecond // LeaseTTL is 2s
	var (
		mu     sync.Mutex
		causes []error
		seen   []error
	)
	ws := e.kindWorkers(leasehold.WorkerOptions{Timeout: timeout, RetryPolicy: fixedRetry(0)},
		func(ctx context.Context, job *leasehold.Job[testArgs]) error {
			if job.Attempt > 1 {
				return nil
			}
			select {
			case <-ctx.Done():
			case <-time.After(30 * time.Second):
			}
			mu.Lock()
			causes = append(causes, context.Cause(ctx))
			mu.Unlock()
			return ctx.Err()
		})
	record := leasehold.WorkMiddlewareFunc(func(ctx context.Context, job *leasehold.JobRow, next func(context.Context) error) error {
		err := next(ctx)
		mu.Lock()
		seen = append(seen, err)
		mu.Unlock()
		return err
	})
	c := e.newClient(e.d, ws, func(c *leasehold.Config) { c.WorkMiddleware = []leasehold.WorkMiddleware{record} })
	id := e.insertOpts(c, nil)
	row := e.waitState(id, leasehold.StateCompleted, 30*time.Second)
	h := e.history(id)
	if len(h) != 2 || h[0].Outcome != leasehold.OutcomeRetried || h[1].Outcome != leasehold.OutcomeCompleted {
		e.Fatalf("history %s, want retried then completed", fmtHistory(h))
	}
	if want := "timed out after 2.5s"; !strings.HasPrefix(h[0].Error, want) {
		e.Errorf("timed-out attempt's error %q, want it to begin %q", h[0].Error, want)
	}
	if ran := h[0].EndedAt.Sub(h[0].ClaimedAt); ran < timeout-slack {
		e.Errorf("timed-out attempt ran %v, want at least the timeout %v", ran, timeout)
	}
	if row.Attempt != 2 {
		e.Errorf("attempt %d, want 2", row.Attempt)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(causes) != 1 || !errors.Is(causes[0], leasehold.ErrJobTimeout) {
		e.Errorf("handler context causes %v, want one ErrJobTimeout", causes)
	}
	var te *leasehold.TimeoutError
	if len(seen) != 2 || !errors.Is(seen[0], leasehold.ErrJobTimeout) || !errors.As(seen[0], &te) || te.Timeout != timeout || seen[1] != nil {
		e.Errorf("errors seen by the work middleware %v, want a *TimeoutError of %v, then nil", seen, timeout)
	}
}

// testKindMaxAttempts: a kind's MaxAttempts is the budget of its jobs
// inserted without one (an explicit one wins, other kinds keep the
// client's default), and a job of the kind that always fails fails after
// that many attempts.
func testKindMaxAttempts(e *clientEnv) {
	ws := e.kindWorkers(leasehold.WorkerOptions{MaxAttempts: 2, RetryPolicy: fixedRetry(0)},
		func(context.Context, *leasehold.Job[testArgs]) error { return errors.New("provider down") })
	c := e.newClient(e.d, ws, func(c *leasehold.Config) { c.DefaultMaxAttempts = 7; c.RetryPolicy = fixedRetry(time.Hour) })
	id := e.insertOpts(c, nil)
	explicit, err := c.Insert(e.ctx, testArgs{N: 2}, &leasehold.InsertOpts{MaxAttempts: 4, Queue: "held"})
	if err != nil {
		e.Fatalf("Insert: %v", err)
	}
	other, err := c.Insert(e.ctx, otherArgs{}, &leasehold.InsertOpts{Queue: "held"})
	if err != nil {
		e.Fatalf("Insert: %v", err)
	}
	e.eqInt("budget of a job of the kind inserted with one", explicit.Job.MaxAttempts, 4)
	e.eqInt("budget of another kind's job", other.Job.MaxAttempts, 7)
	row := e.waitState(id, leasehold.StateFailed, 30*time.Second)
	e.eqInt("budget of the kind's job", row.MaxAttempts, 2)
	h := e.history(id)
	if len(h) != 2 || h[0].Outcome != leasehold.OutcomeRetried || h[1].Outcome != leasehold.OutcomeFailed {
		e.Errorf("history %s, want retried then failed", fmtHistory(h))
	}
}

// testKindRetryPolicy: a kind's retry policy sets the run_at of its
// retried jobs (an hour after the attempt ended, on the database clock),
// while other kinds keep the client's policy (two hours).
func testKindRetryPolicy(e *clientEnv) {
	ws := e.kindWorkers(leasehold.WorkerOptions{RetryPolicy: fixedRetry(time.Hour)},
		func(context.Context, *leasehold.Job[testArgs]) error { return errors.New("try later") })
	c := e.newClient(e.d, ws, func(c *leasehold.Config) { c.RetryPolicy = fixedRetry(2 * time.Hour) })
	ids := map[time.Duration]int64{time.Hour: e.insertOpts(c, nil)}
	res, err := c.Insert(e.ctx, otherArgs{}, nil)
	if err != nil {
		e.Fatalf("Insert: %v", err)
	}
	ids[2*time.Hour] = res.Job.ID
	for delay, id := range ids {
		e.waitFor("the retry to be written", 30*time.Second, func() bool {
			h := e.history(id)
			return len(h) == 1 && h[0].Outcome == leasehold.OutcomeRetried
		})
		row, err := e.d.GetJob(e.ctx, id)
		if err != nil {
			e.Fatalf("GetJob: %v", err)
		}
		ended := e.history(id)[0].EndedAt
		if got := row.RunAt.Sub(ended); row.State != leasehold.StatePending || got < delay-time.Second || got > delay+time.Second {
			e.Errorf("job %d %s, to run %v after its attempt ended; want pending, %v", id, row.State, got, delay)
		}
	}
}

// testUniqueThroughClient: a key of the UniqueWhileUnfinished scope is
// held while its job runs (the duplicate is the running job, also twice in
// one batch) and free once it completed.
func testUniqueThroughClient(e *clientEnv) {
	g := newGate()
	c := e.newClient(e.d, e.workers(func(ctx context.Context, job *leasehold.Job[testArgs]) error {
		g.markStarted()
		<-g.release
		return nil
	}), nil)
	opts := &leasehold.InsertOpts{UniqueKey: "payment-7", UniqueScope: leasehold.UniqueWhileUnfinished}
	first, err := c.Insert(e.ctx, testArgs{N: 1}, opts)
	if err != nil || first.Duplicate {
		e.Fatalf("first Insert = %+v, %v; want a new job", first, err)
	}
	e.waitGate(g.started, "the handler to start")
	batch := []leasehold.InsertManyParams{{Args: testArgs{N: 2}, Opts: opts}, {Args: testArgs{N: 3}, Opts: opts}}
	res, err := c.InsertMany(e.ctx, nil, batch)
	if err != nil || len(res) != 2 {
		e.Fatalf("InsertMany = %v, %v", res, err)
	}
	for i, r := range res {
		if !r.Duplicate || r.Job.ID != first.Job.ID || r.Job.State != leasehold.StateProcessing {
			e.Errorf("insert %d while the job runs: job %d (%s) duplicate %v, want the running job %d",
				i, r.Job.ID, r.Job.State, r.Duplicate, first.Job.ID)
		}
	}
	close(g.release)
	e.waitState(first.Job.ID, leasehold.StateCompleted, 30*time.Second)
	again, err := c.Insert(e.ctx, testArgs{N: 4}, opts)
	if err != nil || again.Duplicate || again.Job.ID == first.Job.ID {
		e.Errorf("Insert once the job completed = %+v, %v; want a new job", again, err)
	}
}

// eqInt fails the test when got != want.
func (e *clientEnv) eqInt(what string, got, want int) {
	e.Helper()
	if got != want {
		e.Errorf("%s = %d, want %d", what, got, want)
	}
}
