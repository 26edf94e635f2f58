package drivertest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/statemachine"
)

// retry is the driver's RetryJob of job id, a completed job refused.
func (c *tc) retry(ctx context.Context, id int64) (*leasehold.JobRow, error) {
	return c.d.RetryJob(ctx, &driver.RetryParams{ID: id})
}

// retryCompleted is the driver's RetryJob of job id, a completed job
// allowed.
func (c *tc) retryCompleted(ctx context.Context, id int64) (*leasehold.JobRow, error) {
	return c.d.RetryJob(ctx, &driver.RetryParams{ID: id, Completed: true})
}

// testRetryJob checks that RetryJob makes failed, cancelled and pending
// jobs, and completed ones when allowed, pending now with a fresh budget
// (FreeAttempts = Attempt), clears finished_at and cancel_requested,
// refuses a completed job it was not allowed to retry with
// ErrJobCompleted, a processing job with ErrJobRunning and a missing one
// with ErrJobNotFound.
func testRetryJob(c *tc) {
	rows := c.insertN(5, "q", "k")
	failed := c.claimID(c.d, rows[0].ID, "w", liveTTL, false)
	c.finish(token(failed.ID, "w", 1, statemachine.Ending{Outcome: leasehold.OutcomeFailed, Error: "boom"}))
	done := c.claimID(c.d, rows[1].ID, "w", liveTTL, false)
	c.finish(fin(done, leasehold.OutcomeCompleted))
	cancelled := c.claimID(c.d, rows[2].ID, "w", liveTTL, false)
	if _, err := c.d.CancelJob(c.ctx, cancelled.ID); err != nil {
		c.Fatalf("CancelJob(processing): %v", err)
	}
	c.finish(fin(cancelled, leasehold.OutcomeCancelled)) // cancel_requested stays set
	running := c.claimID(c.d, rows[3].ID, "w", liveTTL, false)
	later := job("q", "k")
	later.RunIn = time.Hour
	pending := c.insert(later)[0]

	s := c.snap(done.ID)
	if _, err := c.retry(c.ctx, done.ID); !errors.Is(err, leasehold.ErrJobCompleted) {
		c.Errorf("RetryJob of a completed job, not allowed: err %v, want ErrJobCompleted", err)
	}
	c.unchanged("RetryJob of a completed job, not allowed", s)

	for _, id := range []int64{failed.ID, done.ID, cancelled.ID, pending.ID} {
		prev := c.get(id)
		before := c.now()
		retry := c.retry
		if id == done.ID {
			retry = c.retryCompleted
		}
		j, err := retry(c.ctx, id)
		after := c.now()
		if err != nil {
			c.Errorf("RetryJob of a %s job: %v", prev.State, err)
			continue
		}
		what := func(f string) string { return fmt.Sprintf("RetryJob of a %s job: %s", prev.State, f) }
		c.eq(what("State"), j.State, leasehold.StatePending)
		c.eq(what("Attempt"), j.Attempt, prev.Attempt)
		c.eq(what("FreeAttempts"), j.FreeAttempts, prev.Attempt)
		c.eq(what("CancelRequested"), j.CancelRequested, false)
		c.eq(what("LeaseOwner"), j.LeaseOwner, "")
		c.zeroTime(what("LeaseUntil"), j.LeaseUntil)
		c.zeroTime(what("FinishedAt"), j.FinishedAt)
		c.timeIn(what("RunAt"), j.RunAt, before, after)
		c.sameJob(what("GetJob"), c.get(id), j)
	}
	// The fresh budget lets the once-failed job (budget 1) run again.
	again := c.claimID(c.d, failed.ID, "w2", liveTTL, false)
	c.eq("Attempt after RetryJob and claim", again.Attempt, 2)
	c.eq("charged attempts after RetryJob and claim", again.ChargedAttempts(), 1)

	s = c.snap(running.ID)
	if _, err := c.retryCompleted(c.ctx, running.ID); !errors.Is(err, leasehold.ErrJobRunning) {
		c.Errorf("RetryJob of a processing job: err %v, want ErrJobRunning", err)
	}
	c.unchanged("RetryJob of a processing job", s)
	if _, err := c.retryCompleted(c.ctx, rows[4].ID+1000); !errors.Is(err, leasehold.ErrJobNotFound) {
		c.Errorf("RetryJob of a missing job: err %v, want ErrJobNotFound", err)
	}
}

// testRetryRacesCompletion checks that a retry that does not allow
// completed jobs, racing the completion of the job's attempt, never makes
// the job pending: it finds the job processing (ErrJobRunning) or
// completed (ErrJobCompleted), and the job ends completed. A check of
// the state before the retry's UPDATE would let one through.
func testRetryRacesCompletion(c *tc) {
	for i := range 20 {
		j := c.claimID(c.d, c.insert(job("q", "k"))[0].ID, "w", liveTTL, false)
		retried := make(chan error, 1)
		go func() {
			_, err := c.retry(c.ctx, j.ID)
			retried <- err
		}()
		c.eqIDs("Finish completed", c.finish(fin(j, leasehold.OutcomeCompleted)), []int64{j.ID})
		if err := <-retried; !errors.Is(err, leasehold.ErrJobRunning) && !errors.Is(err, leasehold.ErrJobCompleted) {
			c.Errorf("round %d: RetryJob racing the completion: err %v, want ErrJobRunning or ErrJobCompleted", i, err)
		}
		c.eq(fmt.Sprintf("round %d: state after RetryJob raced the completion", i), c.get(j.ID).State, leasehold.StateCompleted)
	}
}

// testCancelJob checks that CancelJob cancels a pending job at once, only
// flags a processing one (reported by the next Heartbeat, lease kept), and
// refuses a terminal job with ErrJobFinished and the job.
func testCancelJob(c *tc) {
	rows := c.insertN(4, "q", "k")
	before := c.now()
	j, err := c.d.CancelJob(c.ctx, rows[0].ID)
	after := c.now()
	if err != nil {
		c.Fatalf("CancelJob(pending): %v", err)
	}
	c.eq("CancelJob(pending) State", j.State, leasehold.StateCancelled)
	c.timeIn("CancelJob(pending) FinishedAt", j.FinishedAt, before, after)
	c.sameJob("GetJob after CancelJob(pending)", c.get(j.ID), j)

	h := c.claimID(c.d, rows[1].ID, "w", liveTTL, false)
	j, err = c.d.CancelJob(c.ctx, h.ID)
	if err != nil {
		c.Fatalf("CancelJob(processing): %v", err)
	}
	want := *h
	want.CancelRequested = true
	c.sameJob("CancelJob(processing) result", j, &want)
	c.sameJob("GetJob after CancelJob(processing)", c.get(h.ID), &want)
	c.eq("Heartbeat after CancelJob (id -> cancel requested)", c.heartbeat("w", liveTTL, ref(h)), map[int64]bool{h.ID: true})

	done := c.claimID(c.d, rows[2].ID, "w", liveTTL, false)
	c.finish(fin(done, leasehold.OutcomeCompleted))
	failed := c.claimID(c.d, rows[3].ID, "w", liveTTL, false)
	c.finish(fin(failed, leasehold.OutcomeFailed))
	for _, id := range []int64{done.ID, failed.ID, rows[0].ID} {
		s := c.snap(id)
		j, err := c.d.CancelJob(c.ctx, id)
		if !errors.Is(err, leasehold.ErrJobFinished) {
			c.Errorf("CancelJob of a %s job: err %v, want ErrJobFinished", s.job.State, err)
		}
		if j == nil || j.ID != id || j.State != s.job.State {
			c.Errorf("CancelJob of a %s job returned %+v, want the job", s.job.State, j)
		}
		c.unchanged("CancelJob of a terminal job", s)
	}
	if _, err := c.d.CancelJob(c.ctx, rows[3].ID+1000); !errors.Is(err, leasehold.ErrJobNotFound) {
		c.Errorf("CancelJob of a missing job: err %v, want ErrJobNotFound", err)
	}
}

// testNotFound checks that GetJob and ClaimByID of a missing id return
// ErrJobNotFound (matched with errors.Is).
func testNotFound(c *tc) {
	j := c.insert(job("q", "k"))[0]
	missing := j.ID + 1000
	if got, err := c.d.GetJob(c.ctx, missing); !errors.Is(err, leasehold.ErrJobNotFound) {
		c.Errorf("GetJob(missing) = %v, %v; want ErrJobNotFound", got, err)
	}
	if got, err := c.d.ClaimByID(c.ctx, &driver.ClaimByIDParams{ID: missing, Owner: "w", TTL: liveTTL, TakeOver: true}); !errors.Is(err, leasehold.ErrJobNotFound) {
		c.Errorf("ClaimByID(missing) = %v, %v; want ErrJobNotFound", got, err)
	}
	if got := c.get(j.ID); got.ID != j.ID {
		c.Errorf("GetJob(%d) returned job %d", j.ID, got.ID)
	}
}
