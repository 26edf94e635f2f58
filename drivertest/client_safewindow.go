package drivertest

import (
	"context"
	"errors"
	"sync/atomic"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// lateDriver wraps a real driver and delays the reply of its next claim
// that leases a job, after that claim has committed: the reply of a slow
// network, a GC pause or a frozen process.
type lateDriver struct {
	driver.Driver
	delayNext atomic.Int64 // nanoseconds; taken by the next non-empty claim
	delayed   atomic.Int64 // claim replies delayed so far
}

// Claim claims through the real driver, then holds a non-empty reply back
// for the delay set in delayNext, once.
func (d *lateDriver) Claim(ctx context.Context, p *driver.ClaimParams) ([]*leasehold.JobRow, error) {
	rows, err := d.Driver.Claim(ctx, p)
	if err != nil || len(rows) == 0 {
		return rows, err
	}
	if delay := time.Duration(d.delayNext.Swap(0)); delay > 0 {
		d.delayed.Add(1)
		select {
		case <-time.After(delay):
		case <-ctx.Done():
		}
	}
	return rows, nil
}

// testLateClaimNeverRuns: client A's claim commits but its reply comes
// back 1.5 s later, past A's 1 s TTL. Client B takes the expired lease
// over and runs the job. A's handler never starts (its lease was past its
// safe window before it could), A counts the skip, and the job is
// completed once, by B; A's attempt ends released or lease_expired.
func testLateClaimNeverRuns(e *clientEnv) {
	ld := &lateDriver{Driver: e.d}
	ld.delayNext.Store(int64(1500 * time.Millisecond))
	var aRan atomic.Int64
	a := e.newClient(ld, e.workers(func(ctx context.Context, job *leasehold.Job[testArgs]) error {
		aRan.Add(1)
		return nil
	}), func(c *leasehold.Config) { oneWorker(c); c.LeaseTTL = time.Second })
	id := e.insertOpts(a, nil)
	e.waitFor("A's claim to commit", 30*time.Second, func() bool {
		row, err := e.d.GetJob(e.ctx, id)
		return err == nil && row.State == leasehold.StateProcessing && row.LeaseOwner == a.Owner()
	})
	checkC := make(chan error, 1)
	b := e.newClient(e.h.OpenSecond(e.T, e.d), e.workers(func(ctx context.Context, job *leasehold.Job[testArgs]) error {
		checkC <- leasehold.CheckLease(ctx)
		// Hold the job until A's late reply has come back and been dealt
		// with, so that A would run while B's lease is live.
		deadline := time.Now().Add(30 * time.Second)
		for a.Stats().SkippedLate == 0 && aRan.Load() == 0 && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		return nil
	}), nil)
	e.waitState(id, leasehold.StateCompleted, time.Minute)
	if err := <-checkC; err != nil {
		e.Errorf("CheckLease in B's handler = %v, want nil", err)
	}
	if n := aRan.Load(); n != 0 || ld.delayed.Load() != 1 {
		e.Fatalf("A's handler ran %d times on a claim whose reply came back past its safe window (delayed replies %d)",
			n, ld.delayed.Load())
	}
	e.waitFor("A to count the skip, B the completion", 10*time.Second, func() bool {
		return a.Stats().SkippedLate == 1 && b.Stats().Completed == 1
	})
	if sa := a.Stats(); sa.Completed != 0 {
		e.Fatalf("A's stats %+v; want nothing completed", sa)
	}
	h := e.history(id)
	if len(h) != 2 || h[0].Owner != a.Owner() ||
		(h[0].Outcome != leasehold.OutcomeReleased && h[0].Outcome != leasehold.OutcomeLeaseExpired) ||
		h[1].Owner != b.Owner() || h[1].Outcome != leasehold.OutcomeCompleted {
		e.Fatalf("history = %s; want A's attempt released or lease_expired, then completed by B", fmtHistory(h))
	}
}

// testLateClaimReleased: a claim reply that comes back past the safe
// window but before the lease expires (nobody else could have the job
// yet) is not run either: the lease is released at once, without waiting
// out the TTL or charging the budget, and the job runs on its next claim,
// where CheckLease reports the lease safe.
func testLateClaimReleased(e *clientEnv) {
	ld := &lateDriver{Driver: e.d}
	ld.delayNext.Store(int64(1800 * time.Millisecond))
	checkC := make(chan error, 2)
	c := e.newClient(ld, e.workers(func(ctx context.Context, job *leasehold.Job[testArgs]) error {
		if job.Attempt == 1 {
			e.Errorf("handler started on attempt 1, whose claim reply came back past its safe window")
		}
		checkC <- leasehold.CheckLease(ctx)
		return nil
	}), func(c *leasehold.Config) {
		oneWorker(c)
		c.LeaseTTL, c.HeartbeatInterval, c.LeaseSafetyMargin = 3*time.Second, time.Second, 1500*time.Millisecond
		c.DisableWatcher = true // only the release can give the job back in time
	})
	id := e.insertOpts(c, nil)
	row := e.waitState(id, leasehold.StateCompleted, 30*time.Second)
	if err := <-checkC; err != nil {
		e.Fatalf("CheckLease in a handler on a fresh lease = %v, want nil", err)
	}
	if err := leasehold.CheckLease(e.ctx); !errors.Is(err, leasehold.ErrNotInHandler) {
		e.Fatalf("CheckLease outside a handler = %v, want ErrNotInHandler", err)
	}
	h := e.history(id)
	if ld.delayed.Load() != 1 || row.Attempt != 2 || row.ChargedAttempts() != 1 || len(h) != 2 ||
		h[0].Outcome != leasehold.OutcomeReleased || h[1].Outcome != leasehold.OutcomeCompleted {
		e.Fatalf("delayed %d, attempt %d, charged %d, history %s; want the late attempt released uncharged, then completed",
			ld.delayed.Load(), row.Attempt, row.ChargedAttempts(), fmtHistory(h))
	}
	// The counters move just after the outcome's statement commits.
	e.waitFor("1 skipped late, 1 released, 1 completed", 10*time.Second, func() bool {
		s := c.Stats()
		return s.SkippedLate == 1 && s.Released == 1 && s.Completed == 1
	})
}

// testCheckLeaseRefusesPastSafeWindow: a handler whose heartbeats fail
// gets nil from CheckLease while its lease is safe, then ErrLeaseLost
// before the lease expires by the database clock, so an outside call
// guarded by it never starts once another worker could own the job.
func testCheckLeaseRefusesPastSafeWindow(e *clientEnv) {
	fd := &faultDriver{Driver: e.d}
	type result struct {
		first, last error
		dbNow       time.Time
	}
	resC := make(chan result, 1)
	c := e.newClient(fd, e.workers(func(ctx context.Context, job *leasehold.Job[testArgs]) error {
		if job.Attempt > 1 {
			return nil
		}
		r := result{first: leasehold.CheckLease(ctx)}
		fd.cutOff.Store(true)
		deadline := time.Now().Add(30 * time.Second)
		for r.last == nil && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
			r.last = leasehold.CheckLease(ctx)
		}
		r.dbNow, _ = e.d.Now(context.Background())
		resC <- r
		return r.last
	}), func(c *leasehold.Config) {
		c.LeaseTTL, c.HeartbeatInterval, c.LeaseSafetyMargin = 1500*time.Millisecond, 300*time.Millisecond, 500*time.Millisecond
		c.DisableWatcher = true
	})
	id := e.insertOpts(c, nil)
	var r result
	select {
	case r = <-resC:
	case <-time.After(time.Minute):
		e.Fatalf("handler did not finish")
	}
	row, err := e.d.GetJob(e.ctx, id)
	if err != nil {
		e.Fatalf("GetJob: %v", err)
	}
	if r.first != nil || !errors.Is(r.last, leasehold.ErrLeaseLost) {
		e.Fatalf("CheckLease = %v on a fresh lease, %v once unrenewed; want nil, then ErrLeaseLost", r.first, r.last)
	}
	if row.State == leasehold.StateProcessing && !r.dbNow.Before(row.LeaseUntil) {
		e.Fatalf("CheckLease refused at %v, not before the lease expired at %v", r.dbNow, row.LeaseUntil)
	}
}
