package drivertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// testWatcher: jobs whose worker died (a claim with a short lease that
// nobody renews) are returned to pending, flagged stuck in a FlagStuck
// queue, or failed when their budget is spent, by the client's watcher.
func testWatcher(e *clientEnv) {
	c := e.newClient(e.d, nil, func(c *leasehold.Config) {
		c.WatcherInterval = 50 * time.Millisecond
		c.Queues = map[string]leasehold.QueueConfig{"flagged": {FlagStuck: true}, leasehold.DefaultQueue: {}}
	})
	requeue := e.insertOpts(c, &leasehold.InsertOpts{MaxAttempts: 3})
	flag := e.insertOpts(c, &leasehold.InsertOpts{Queue: "flagged", MaxAttempts: 3})
	exhaust := e.insertOpts(c, &leasehold.InsertOpts{MaxAttempts: 1})
	for _, id := range []int64{requeue, flag, exhaust} {
		if _, err := e.d.ClaimByID(e.ctx, &driver.ClaimByIDParams{ID: id, Owner: "dead-worker", TTL: 100 * time.Millisecond}); err != nil {
			e.Fatalf("ClaimByID: %v", err)
		}
	}
	for id, want := range map[int64]leasehold.JobState{
		requeue: leasehold.StatePending, flag: leasehold.StateStuck, exhaust: leasehold.StateFailed,
	} {
		row := e.waitState(id, want, 30*time.Second)
		h := e.history(id)
		if row.Attempt != 1 || row.LeaseOwner != "" || len(h) != 1 || h[0].Outcome != leasehold.OutcomeLeaseExpired {
			e.Fatalf("job %d -> %s: attempt %d owner %q history %s", id, want, row.Attempt, row.LeaseOwner, fmtHistory(h))
		}
	}
	// The counter moves just after the watcher's statement commits.
	e.waitFor("the watcher to count 3 rescued jobs", 10*time.Second, func() bool { return c.Stats().Rescued >= 3 })
}

// testWatcherOwnQueuesOnly: a client's watcher leaves alone the expired
// leases of queues it is not configured for, whose policy it does not
// know (here a payment queue another client reconciles): it requeues the
// expired lease of its own queue, which expired later, and not the
// payment's. An explicit RescueExpired still looks at every queue.
func testWatcherOwnQueuesOnly(e *clientEnv) {
	c := e.newClient(e.d, nil, func(c *leasehold.Config) {
		c.WatcherInterval = 50 * time.Millisecond
		c.Queues = map[string]leasehold.QueueConfig{"emails": {}}
	})
	payment := e.insertOpts(c, &leasehold.InsertOpts{Queue: "payments", MaxAttempts: 3})
	email := e.insertOpts(c, &leasehold.InsertOpts{Queue: "emails", MaxAttempts: 3})
	for _, id := range []int64{payment, email} { // the payment's lease expires first
		if _, err := e.d.ClaimByID(e.ctx, &driver.ClaimByIDParams{ID: id, Owner: "dead-worker", TTL: 100 * time.Millisecond}); err != nil {
			e.Fatalf("ClaimByID: %v", err)
		}
	}
	e.waitState(email, leasehold.StatePending, 30*time.Second)
	e.waitFor("the watcher to count the rescue", 10*time.Second, func() bool { return c.Stats().Rescued >= 1 })
	if row, err := e.d.GetJob(e.ctx, payment); err != nil || row.State != leasehold.StateProcessing {
		e.Fatalf("payment job after the emails client's watcher: %+v, %v; want it left processing", row, err)
	}
	moved, err := c.RescueExpired(e.ctx)
	if err != nil || len(moved) != 1 || moved[0].ID != payment {
		e.Fatalf("RescueExpired = %d jobs, %v; want the payment job", len(moved), err)
	}
}

// testLostClaimReplyReleased: a claim that committed but whose reply was
// lost leaves a lease nobody runs; the client releases it before its next
// claim, its attempt not charged, so a job with one attempt runs once and
// completes, where it used to wait out the TTL and fail without running.
// The release is reported as any other (EventFinished, released), so
// Stats and the metrics count every outcome the client wrote.
func testLostClaimReplyReleased(e *clientEnv) {
	fd := &faultDriver{Driver: e.d}
	var mu sync.Mutex
	runs := map[int64]int{}
	c := e.newClient(fd, e.workers(func(_ context.Context, job *leasehold.Job[testArgs]) error {
		mu.Lock()
		runs[job.ID]++
		mu.Unlock()
		return nil
	}), nil)
	first := e.insertOpts(c, &leasehold.InsertOpts{MaxAttempts: 1}) // a reply read: the client knows its leases
	e.waitState(first, leasehold.StateCompleted, 30*time.Second)
	fd.loseClaims.Store(1)
	id := e.insertOpts(c, &leasehold.InsertOpts{MaxAttempts: 1})
	var row *leasehold.JobRow
	e.waitFor("the job to finish", 30*time.Second, func() bool {
		var err error
		if row, err = e.d.GetJob(e.ctx, id); err != nil {
			e.Fatalf("GetJob: %v", err)
		}
		return row.State.Finished()
	})
	if fd.lostClaims.Load() != 1 {
		e.Fatalf("no claim reply was lost (job %s, history %s)", row.State, fmtHistory(e.history(id)))
	}
	mu.Lock()
	ran := runs[id]
	mu.Unlock()
	h := e.history(id)
	if row.State != leasehold.StateCompleted || ran != 1 || len(h) != 2 ||
		h[0].Outcome != leasehold.OutcomeReleased || h[1].Outcome != leasehold.OutcomeCompleted {
		e.Fatalf("job after a lost claim reply: %s, handler ran %d times, history %s; want completed, once, released then completed",
			row.State, ran, fmtHistory(h))
	}
	// A completion is reported after its commit: wait for the counts,
	// then check that none went past them.
	st := c.Stats()
	for deadline := time.Now().Add(5 * time.Second); (st.Released < 1 || st.Completed < 2) && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
		st = c.Stats()
	}
	if st.Released != 1 || st.Completed != 2 {
		e.Fatalf("Stats after a lost claim reply: released %d, completed %d; want the release and both completions reported",
			st.Released, st.Completed)
	}
}

func (e *clientEnv) insertOpts(c *leasehold.Client, opts *leasehold.InsertOpts) int64 {
	e.Helper()
	res, err := c.Insert(e.ctx, testArgs{N: 1}, opts)
	if err != nil {
		e.Fatalf("Insert: %v", err)
	}
	return res.Job.ID
}

// testShutdownReleases: Stop lets a job that finishes in time complete,
// then cancels the one that does not and releases its lease at once: it is
// pending, unowned, not charged, and claimable without waiting for a TTL.
func testShutdownReleases(e *clientEnv) {
	stopping := make(chan struct{})
	var started atomic.Int32
	c := e.newClient(e.d, e.workers(func(ctx context.Context, job *leasehold.Job[testArgs]) error {
		started.Add(1)
		if job.Args.N == 1 {
			<-stopping
			return nil
		}
		<-ctx.Done()
		return ctx.Err()
	}), func(c *leasehold.Config) { c.LeaseTTL = time.Minute; c.ShutdownTimeout = 300 * time.Millisecond })
	quick := e.insertOpts(c, nil)
	slow, err := c.Insert(e.ctx, testArgs{N: 2}, nil)
	if err != nil {
		e.Fatalf("Insert: %v", err)
	}
	e.waitFor("both handlers to start", 30*time.Second, func() bool { return started.Load() == 2 })
	close(stopping)
	if err := c.Stop(e.ctx); err != nil {
		e.Fatalf("Stop: %v", err)
	}
	if row, _ := e.d.GetJob(e.ctx, quick); row.State != leasehold.StateCompleted {
		e.Fatalf("job that finished within the deadline is %s, want completed", row.State)
	}
	row, _ := e.d.GetJob(e.ctx, slow.Job.ID)
	if row.State != leasehold.StatePending || row.LeaseOwner != "" || row.FreeAttempts != 1 {
		e.Fatalf("released job: %+v; want pending, unowned, free_attempts 1", row)
	}
	if h := e.history(slow.Job.ID); len(h) != 1 || h[0].Outcome != leasehold.OutcomeReleased {
		e.Fatalf("history = %s; want released", fmtHistory(h))
	}
	got, err := e.d.ClaimByID(e.ctx, &driver.ClaimByIDParams{ID: slow.Job.ID, Owner: "next", TTL: time.Minute})
	if err != nil || got == nil {
		e.Fatalf("released job not claimable at once: %v %v", got, err)
	}
	if err := c.Stop(e.ctx); err != nil {
		e.Fatalf("second Stop: %v", err)
	}
	if err := c.Start(e.ctx); !errors.Is(err, leasehold.ErrClientStopped) {
		e.Fatalf("Start after Stop = %v, want ErrClientStopped", err)
	}
}

// unstorableError has what a database text column refuses (a NUL byte,
// invalid UTF-8) and is far longer than the error text an attempt keeps.
var unstorableError = "bad \x00 bytes \xff and " + strings.Repeat("x", 100_000)

// testHandlerOutcomes: what a handler returns decides the job's fate. An
// error text the database cannot store as is (case 6) is made storable
// rather than blocking the outcome. A handler error wrapping a
// checkpoint refused for its name or data (cases 7, 8) fails the job at
// its first attempt.
func testHandlerOutcomes(e *clientEnv) {
	c := e.newClient(e.d, e.workers(func(ctx context.Context, job *leasehold.Job[testArgs]) error {
		switch job.Args.N {
		case 1:
			return leasehold.Permanent(errors.New("card declined"))
		case 2:
			return leasehold.Snooze(time.Hour)
		case 3:
			return leasehold.Cancel(errors.New("order withdrawn"))
		case 4:
			return errors.New("provider timeout")
		case 5:
			panic("handler bug")
		case 6:
			return leasehold.Permanent(errors.New(unstorableError))
		case 7:
			_, err := leasehold.Checkpoint(ctx, "about to charge", nil)
			return fmt.Errorf("charge: %w", err)
		case 8:
			_, err := leasehold.Checkpoint(ctx, "charge-sent", map[string]string{"answer": "a\x00b"})
			return fmt.Errorf("charge: %w", err)
		case 9:
			// 9 numbers of 8 bytes, 131,072 digits each as stored: past
			// the default MaxPayloadBytes once written out.
			huge := json.RawMessage("[" + strings.TrimSuffix(strings.Repeat("1e131071,", 9), ",") + "]")
			_, err := leasehold.Checkpoint(ctx, "charge-sent", huge)
			return fmt.Errorf("charge: %w", err)
		}
		return nil
	}), func(c *leasehold.Config) { c.RetryPolicy = fixedRetry(0) })
	cases := []struct {
		n            int
		max          int
		state        leasehold.JobState
		attempt      int
		last         leasehold.Outcome
		errorHas     string
		freeAttempts int
	}{
		{1, 5, leasehold.StateFailed, 1, leasehold.OutcomeFailed, "card declined", 0},
		{2, 5, leasehold.StatePending, 1, leasehold.OutcomeSnoozed, "", 1},
		{3, 5, leasehold.StateCancelled, 1, leasehold.OutcomeCancelled, "order withdrawn", 0},
		{4, 2, leasehold.StateFailed, 2, leasehold.OutcomeFailed, "provider timeout", 0},
		{5, 1, leasehold.StateFailed, 1, leasehold.OutcomeFailed, "goroutine", 0},
		{6, 5, leasehold.StateFailed, 1, leasehold.OutcomeFailed, "bad \uFFFD bytes \uFFFD and xxx", 0},
		// A checkpoint refused for its name or data fails the job at once:
		// another attempt would be refused the same way.
		{7, 5, leasehold.StateFailed, 1, leasehold.OutcomeFailed, "leasehold: invalid arguments: checkpoint name", 0},
		{8, 5, leasehold.StateFailed, 1, leasehold.OutcomeFailed, "leasehold: invalid arguments: checkpoint data", 0},
		{9, 5, leasehold.StateFailed, 1, leasehold.OutcomeFailed, "leasehold: job payload too large: checkpoint data", 0},
	}
	for _, tc := range cases {
		res, err := c.Insert(e.ctx, testArgs{N: tc.n}, &leasehold.InsertOpts{MaxAttempts: tc.max})
		if err != nil {
			e.Fatalf("Insert: %v", err)
		}
		var row *leasehold.JobRow
		e.waitFor("outcome of case "+string(tc.last), 30*time.Second, func() bool {
			h := e.history(res.Job.ID)
			return len(h) == tc.attempt && h[len(h)-1].Outcome != leasehold.OutcomeRunning
		})
		row, _ = e.d.GetJob(e.ctx, res.Job.ID)
		h := e.history(res.Job.ID)
		last := h[len(h)-1]
		if row.State != tc.state || row.Attempt != tc.attempt || last.Outcome != tc.last ||
			!strings.Contains(last.Error, tc.errorHas) || row.FreeAttempts != tc.freeAttempts {
			e.Fatalf("case %d: state %s attempt %d free %d history %s; want %s %d %d %s containing %q",
				tc.n, row.State, row.Attempt, row.FreeAttempts, fmtHistory(h), tc.state, tc.attempt, tc.freeAttempts, tc.last, tc.errorHas)
		}
		if n := len(last.Error); n > leasehold.MaxErrorText || len(row.LastError) != n {
			e.Fatalf("case %d: stored error of %d bytes (job's last_error %d), want at most %d",
				tc.n, n, len(row.LastError), leasehold.MaxErrorText)
		}
	}
	if c.Stats().Panics != 1 {
		e.Fatalf("panics = %d, want 1", c.Stats().Panics)
	}
}

// testOperatorCancelRunning: cancelling a processing job cancels its
// handler at the next heartbeat with ErrJobCancelled; it ends cancelled.
func testOperatorCancelRunning(e *clientEnv) {
	started := make(chan struct{})
	causeC := make(chan error, 1)
	c := e.newClient(e.d, e.workers(func(ctx context.Context, job *leasehold.Job[testArgs]) error {
		close(started)
		<-ctx.Done()
		causeC <- context.Cause(ctx)
		return ctx.Err()
	}), func(c *leasehold.Config) { c.LeaseTTL = time.Second })
	id := e.insertOpts(c, nil)
	e.waitGate(started, "the handler to start")
	row, err := c.CancelJob(e.ctx, id)
	if err != nil || !row.CancelRequested || row.State != leasehold.StateProcessing {
		e.Fatalf("CancelJob = %+v, %v; want processing with cancel requested", row, err)
	}
	select {
	case cause := <-causeC:
		if !errors.Is(cause, leasehold.ErrJobCancelled) {
			e.Fatalf("cause = %v, want ErrJobCancelled", cause)
		}
	case <-time.After(30 * time.Second):
		e.Fatalf("handler not cancelled")
	}
	e.waitState(id, leasehold.StateCancelled, 30*time.Second)
	if _, err := c.CancelJob(e.ctx, id); !errors.Is(err, leasehold.ErrJobFinished) {
		e.Fatalf("second CancelJob = %v, want ErrJobFinished", err)
	}
}

// testUnregisteredKinds: a client claims only kinds it has handlers for,
// so jobs of a kind it does not know stay pending and unspent.
func testUnregisteredKinds(e *clientEnv) {
	c := e.newClient(e.d, e.workers(func(context.Context, *leasehold.Job[testArgs]) error { return nil }), nil)
	other, err := c.Insert(e.ctx, otherArgs{N: 1}, nil)
	if err != nil {
		e.Fatalf("Insert: %v", err)
	}
	for range 3 {
		id := e.insertOpts(c, nil)
		e.waitState(id, leasehold.StateCompleted, 30*time.Second)
	}
	row, _ := e.d.GetJob(e.ctx, other.Job.ID)
	if row.State != leasehold.StatePending || row.Attempt != 0 {
		e.Fatalf("job of an unregistered kind: state %s attempt %d; want pending, 0", row.State, row.Attempt)
	}
}
