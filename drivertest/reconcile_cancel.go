package drivertest

import (
	"fmt"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/statemachine"
)

// reconcilingCancelled returns a reconciling job of queue "recq" whose
// cancel was requested while its lease ran, and its reconcile job,
// claimed by "rec-w".
func (c *tc) reconcilingCancelled() (orig, rec *leasehold.JobRow) {
	c.Helper()
	held := c.expiredIn("recq", 3)
	if _, err := c.d.CancelJob(c.ctx, held.ID); err != nil {
		c.Fatalf("CancelJob(processing): %v", err)
	}
	res := c.rescue(c.d)
	if len(res) != 1 || res[0].ReconcileJobID == 0 {
		c.Fatalf("rescue of job %d = %+v; want it reconciling with a reconcile job", held.ID, res)
	}
	return c.get(held.ID), c.claimID(c.d, res[0].ReconcileJobID, "rec-w", liveTTL, false)
}

// testResolveCancelRequested: a payment an operator asked to cancel
// while its worker was dead is reconciled before anything else (the
// attempt may have charged). A resolution that would run it again (retry,
// snooze) cancels it instead, finished with its run_at kept; complete,
// stuck and fail apply as given. Resolve returns the state written, and
// the resolution is recorded on the expired attempt either way: its
// CancelledResolution when the job was cancelled, else its Resolution;
// with no CancelledResolution, its Resolution.
func testResolveCancelRequested(c *tc) {
	cases := []struct {
		r     statemachine.Resolution
		delay time.Duration
		state leasehold.JobState
	}{
		{statemachine.ResolveComplete, 0, leasehold.StateCompleted},
		{statemachine.ResolveRetry, time.Hour, leasehold.StateCancelled},
		{statemachine.ResolveSnooze, time.Hour, leasehold.StateCancelled},
		{statemachine.ResolveStuck, 0, leasehold.StateStuck},
		{statemachine.ResolveFail, 0, leasehold.StateFailed},
	}
	for _, rc := range cases {
		orig, rec := c.reconcilingCancelled()
		c.eq("reconciling job keeps its cancel request", orig.CancelRequested, true)
		text := fmt.Sprintf("resolution %d", rc.r)
		before := c.now()
		state, err := c.d.Resolve(c.ctx, nil, resolveParams(orig, rec, "rec-w", c.resolution(rc.r, rc.delay, "n"), text))
		after := c.now()
		if err != nil {
			c.Fatalf("Resolve(%d) of a cancel-requested job: %v", rc.r, err)
		}
		c.eq(fmt.Sprintf("state Resolve(%d) returned for a cancel-requested job", rc.r), state, rc.state)
		if rc.state == leasehold.StateCancelled {
			c.checkResolved(orig, rc.state, rc.r == statemachine.ResolveSnooze, 0, "n", before, after)
		} else {
			c.checkResolved(orig, rc.state, false, rc.delay, "n", before, after)
		}
		want := text
		if rc.state == leasehold.StateCancelled {
			want = cancelledText(text)
		}
		c.eq(fmt.Sprintf("resolution %d on the history of a cancel-requested job", rc.r), c.attempts(orig.ID)[0].Resolution, want)
	}
	orig, rec := c.reconcilingCancelled()
	p := resolveParams(orig, rec, "rec-w", c.resolution(statemachine.ResolveRetry, time.Hour, "n"), "retried")
	p.CancelledResolution = ""
	if _, err := c.d.Resolve(c.ctx, nil, p); err != nil {
		c.Fatalf("Resolve(retry) with no CancelledResolution: %v", err)
	}
	c.eq("resolution on the history with no CancelledResolution", c.attempts(orig.ID)[0].Resolution, "retried")
}
