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

// testOperatorActionsAfterHeartbeat applies every operator action to a
// job that was claimed and heartbeated and then brought to the state the
// action starts from, and checks every column of the resulting row (by
// the database clock where it sets a time) and the history, which no
// operator action changes: RetryJob from pending, stuck, reconciling, failed
// and cancelled, and from completed when allowed, and its refusal of a
// processing job and of a completed one when not allowed; CancelJob
// of pending, stuck, reconciling and processing jobs, and its refusal of terminal
// ones; Purge of the terminal jobs, and of nothing else.
func testOperatorActionsAfterHeartbeat(c *tc) {
	retryable := []leasehold.JobState{leasehold.StatePending, leasehold.StateStuck, leasehold.StateReconciling,
		leasehold.StateFailed, leasehold.StateCancelled}
	for _, s := range retryable {
		c.checkRetry(c.heartbeatedIn(s), c.retry)
	}
	c.checkRetry(c.heartbeatedIn(leasehold.StateCompleted), c.retryCompleted)
	c.checkRefused("RetryJob", c.heartbeatedIn(leasehold.StateCompleted), c.retry, leasehold.ErrJobCompleted)
	c.checkRefused("RetryJob", c.heartbeatedIn(leasehold.StateProcessing), c.retry, leasehold.ErrJobRunning)
	c.checkRefused("RetryJob (completed allowed)", c.heartbeatedIn(leasehold.StateProcessing), c.retryCompleted, leasehold.ErrJobRunning)
	for _, s := range []leasehold.JobState{leasehold.StatePending, leasehold.StateStuck, leasehold.StateReconciling} {
		c.checkCancelNow(c.heartbeatedIn(s))
	}
	c.checkCancelRequest(c.heartbeatedIn(leasehold.StateProcessing))
	for _, s := range []leasehold.JobState{leasehold.StateCompleted, leasehold.StateFailed, leasehold.StateCancelled} {
		c.checkRefused("CancelJob", c.heartbeatedIn(s), c.d.CancelJob, leasehold.ErrJobFinished)
	}
	c.checkPurgeAll()
}

// heartbeatedIn returns a new job that was claimed by owner "w" and
// heartbeated, then brought to state: pending by a retry delayed an hour
// (last_error "boom"), stuck by the watcher (queue "flagq" flagged),
// reconciling by the watcher (queue "recq" reconciles),
// failed ("boom"), completed, cancelled by its handler after an operator's
// request (cancel_requested stays set), or still processing.
func (c *tc) heartbeatedIn(state leasehold.JobState) *leasehold.JobRow {
	c.Helper()
	queue, ttl := "q", liveTTL
	switch state {
	case leasehold.StateStuck:
		queue, ttl = "flagq", shortTTL
	case leasehold.StateReconciling:
		queue, ttl = "recq", shortTTL
	}
	j := c.claimID(c.d, c.insert(job(queue, "k"))[0].ID, "w", ttl, false)
	if hb := c.heartbeat("w", ttl, ref(j)); len(hb) != 1 {
		c.Fatalf("Heartbeat of job %d renewed %v", j.ID, hb)
	}
	end := func(e statemachine.Ending) {
		c.eqIDs(fmt.Sprintf("Finish %s", e.Outcome), c.finish(token(j.ID, "w", j.Attempt, e)), []int64{j.ID})
	}
	switch state {
	case leasehold.StatePending:
		end(statemachine.Ending{Outcome: leasehold.OutcomeRetried, Delay: time.Hour, Error: "boom"})
	case leasehold.StateStuck:
		c.waitExpired(c.get(j.ID))
		decide := statemachine.Rescuer([]string{"flagq"})
		if _, err := c.d.RescueExpired(c.ctx, &driver.RescueParams{Decide: decide}); err != nil {
			c.Fatalf("RescueExpired: %v", err)
		}
	case leasehold.StateReconciling:
		c.waitExpired(c.get(j.ID))
		if _, err := c.d.RescueExpired(c.ctx, &driver.RescueParams{Decide: reconcileDecide}); err != nil {
			c.Fatalf("RescueExpired: %v", err)
		}
	case leasehold.StateFailed:
		end(statemachine.Ending{Outcome: leasehold.OutcomeFailed, Error: "boom"})
	case leasehold.StateCompleted:
		end(statemachine.Ending{Outcome: leasehold.OutcomeCompleted})
	case leasehold.StateCancelled:
		if _, err := c.d.CancelJob(c.ctx, j.ID); err != nil {
			c.Fatalf("CancelJob(processing): %v", err)
		}
		end(statemachine.Ending{Outcome: leasehold.OutcomeCancelled, Error: "cancelled by operator"})
	}
	got := c.get(j.ID)
	if got.State != state || got.HeartbeatAt.IsZero() {
		c.Fatalf("job %d: state %s, heartbeat_at %v; want %s after a heartbeat", j.ID, got.State, got.HeartbeatAt, state)
	}
	return got
}

// checkRetry checks RetryJob of prev by retry (c.retry or
// c.retryCompleted): pending now (database clock) with a fresh budget
// (free_attempts = attempt), no lease, no heartbeat, no finish time, no
// cancel request, the same attempt and last_error.
func (c *tc) checkRetry(prev *leasehold.JobRow, retry func(context.Context, int64) (*leasehold.JobRow, error)) {
	c.Helper()
	c.checkAction("RetryJob", prev, retry, func(want, got *leasehold.JobRow, before, after time.Time) {
		want.State, want.FreeAttempts, want.CancelRequested = leasehold.StatePending, prev.Attempt, false
		want.LeaseOwner, want.LeaseUntil, want.HeartbeatAt, want.FinishedAt = "", time.Time{}, time.Time{}, time.Time{}
		c.timeIn(fmt.Sprintf("RetryJob of a %s job: RunAt (now)", prev.State), got.RunAt, before, after)
		want.RunAt = got.RunAt
	})
}

// checkCancelNow checks CancelJob of prev, a pending or stuck job:
// cancelled with finished_at now (database clock), every other column as
// it was.
func (c *tc) checkCancelNow(prev *leasehold.JobRow) {
	c.Helper()
	c.checkAction("CancelJob", prev, c.d.CancelJob, func(want, got *leasehold.JobRow, before, after time.Time) {
		want.State = leasehold.StateCancelled
		c.timeIn(fmt.Sprintf("CancelJob of a %s job: FinishedAt (now)", prev.State), got.FinishedAt, before, after)
		want.FinishedAt = got.FinishedAt
	})
}

// checkCancelRequest checks CancelJob of prev, a processing job: only
// cancel_requested is set; the lease is untouched.
func (c *tc) checkCancelRequest(prev *leasehold.JobRow) {
	c.Helper()
	c.checkAction("CancelJob", prev, c.d.CancelJob, func(want, _ *leasehold.JobRow, _, _ time.Time) {
		want.CancelRequested = true
	})
}

// checkAction runs action (named name) on prev, and checks that it
// returned and stored the row that change makes of a copy of prev (change
// gets the row returned and the database clock just before and after the
// action), and that it left the history unchanged.
func (c *tc) checkAction(name string, prev *leasehold.JobRow, action func(context.Context, int64) (*leasehold.JobRow, error),
	change func(want, got *leasehold.JobRow, before, after time.Time)) {
	c.Helper()
	what := fmt.Sprintf("%s of a %s job", name, prev.State)
	s := c.snap(prev.ID)
	before := c.now()
	got, err := action(c.ctx, prev.ID)
	after := c.now()
	if err != nil {
		c.Errorf("%s: %v", what, err)
		return
	}
	want := *prev
	change(&want, got, before, after)
	c.sameJob(what+" (returned row)", got, &want)
	c.sameJob(what+" (stored row)", c.get(prev.ID), &want)
	for _, d := range diffAttempts(c.attempts(prev.ID), s.attempts) {
		c.Errorf("%s changed the history: job %d %s", what, prev.ID, d)
	}
}

// checkRefused checks that action (RetryJob or CancelJob) refuses prev
// with wantErr, returns the job when it is CancelJob, and changes nothing.
func (c *tc) checkRefused(name string, prev *leasehold.JobRow, action func(ctx context.Context, id int64) (*leasehold.JobRow, error), wantErr error) {
	c.Helper()
	what := fmt.Sprintf("%s of a %s job", name, prev.State)
	s := c.snap(prev.ID)
	j, err := action(c.ctx, prev.ID)
	if !errors.Is(err, wantErr) {
		c.Errorf("%s: err %v, want %v", what, err, wantErr)
	}
	if errors.Is(wantErr, leasehold.ErrJobFinished) {
		if j == nil {
			c.Errorf("%s returned no job, want the job", what)
		} else {
			c.sameJob(what+" (returned row)", j, prev)
		}
	}
	c.unchanged(what, s)
}

// checkPurgeAll checks that Purge deletes every terminal job finished
// before now, with its history, and no other job.
func (c *tc) checkPurgeAll() {
	c.Helper()
	all, err := c.d.ListJobs(c.ctx, &leasehold.ListParams{Limit: 1000})
	if err != nil {
		c.Fatalf("ListJobs: %v", err)
	}
	var (
		gone []int64
		kept []snapshot
		last time.Time
	)
	for _, j := range all {
		if !j.State.Finished() {
			kept = append(kept, c.snap(j.ID))
			continue
		}
		gone = append(gone, j.ID)
		if j.FinishedAt.After(last) {
			last = j.FinishedAt
		}
	}
	c.waitPast(last)
	if n := c.purge(0, 0); n != int64(len(gone)) {
		c.Errorf("Purge deleted %d jobs, want the %d terminal ones", n, len(gone))
	}
	for _, id := range gone {
		if j, err := c.d.GetJob(c.ctx, id); !errors.Is(err, leasehold.ErrJobNotFound) {
			c.Errorf("GetJob of purged job %d = %+v, %v; want ErrJobNotFound", id, j, err)
		}
		if as := c.attempts(id); len(as) != 0 {
			c.Errorf("purged job %d still has %d attempt rows", id, len(as))
		}
	}
	for _, s := range kept {
		c.unchanged(fmt.Sprintf("Purge of a %s job", s.job.State), s)
	}
}
