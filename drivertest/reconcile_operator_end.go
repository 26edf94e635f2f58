package drivertest

import (
	"errors"
	"fmt"
	"strings"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/statemachine"
)

// testCancelReconcileJobLeavesJobStuck: an operator's cancel of a
// reconcile job that has not decided (pending, processing under its
// reconciler, or stuck after its own budget ran out) sends the job it
// reconciles to stuck in the same transaction, so that no job is left
// reconciling with no reconcile job to decide it. The job's last_error
// and its expired attempt's resolution name the reconcile job; a
// reconciler still running is refused (ErrNotReconciling) and changes
// nothing. A reconcile job cancelled after its job was retried by an
// operator leaves that job alone.
func testCancelReconcileJobLeavesJobStuck(c *tc) {
	for _, how := range []string{"pending", "processing", "stuck"} {
		orig, rec := c.reconcilingWithRecIn(how)
		got, err := c.d.CancelJob(c.ctx, rec.ID)
		if err != nil {
			c.Fatalf("CancelJob(%s reconcile job): %v", how, err)
		}
		if how == "processing" {
			c.eq("CancelJob(processing reconcile job) cancel requested", got.CancelRequested, true)
		} else {
			c.eq(fmt.Sprintf("CancelJob(%s reconcile job) state", how), got.State, leasehold.StateCancelled)
		}
		c.checkStranded(orig, rec, "cancelled by an operator", how)
		if how != "processing" {
			continue
		}
		after := c.snap(orig.ID)
		_, err = c.d.Resolve(c.ctx, nil, resolveParams(orig, rec, "rec-w", c.resolution(statemachine.ResolveComplete, 0, ""), "x"))
		if !errors.Is(err, leasehold.ErrNotReconciling) {
			c.Errorf("Resolve by the cancelled reconcile job = %v, want ErrNotReconciling", err)
		}
		c.unchanged("the stuck job after its cancelled reconciler resolved", after)
	}

	orig, rec := c.reconcilingWithRecIn("pending")
	if _, err := c.retry(c.ctx, orig.ID); err != nil {
		c.Fatalf("RetryJob(reconciling): %v", err)
	}
	before := c.snap(orig.ID)
	if _, err := c.d.CancelJob(c.ctx, rec.ID); err != nil {
		c.Fatalf("CancelJob(reconcile job of a retried job): %v", err)
	}
	c.unchanged("a retried job after its reconcile job was cancelled", before)
}

// testDeleteReconcileJobLeavesJobStuck: a reconcile job whose handler
// returned without resolving completes and leaves its job reconciling;
// deleting it sends the job to stuck in the same transaction, as a cancel
// does, with a last_error and a resolution that say it was deleted.
// Deleting a reconcile job that did resolve changes nothing more.
func testDeleteReconcileJobLeavesJobStuck(c *tc) {
	orig, rec := c.reconcilingWithRecIn("processing")
	c.finish(fin(rec, leasehold.OutcomeCompleted))
	c.eq("a job whose reconcile job completed without resolving", c.get(orig.ID).State, leasehold.StateReconciling)
	if _, err := c.d.DeleteJob(c.ctx, rec.ID); err != nil {
		c.Fatalf("DeleteJob(completed reconcile job): %v", err)
	}
	c.checkStranded(orig, rec, "deleted by an operator", "deleted")

	orig, rec = c.reconcilingWithRecIn("processing")
	if _, err := c.d.Resolve(c.ctx, nil, resolveParams(orig, rec, "rec-w", c.resolution(statemachine.ResolveComplete, 0, ""), "done")); err != nil {
		c.Fatalf("Resolve: %v", err)
	}
	c.finish(fin(rec, leasehold.OutcomeCompleted))
	before := c.snap(orig.ID)
	if _, err := c.d.DeleteJob(c.ctx, rec.ID); err != nil {
		c.Fatalf("DeleteJob(reconcile job that resolved): %v", err)
	}
	c.unchanged("a resolved job after its reconcile job was deleted", before)
}

// reconcilingWithRecIn returns a reconciling job of queue "recq" and its
// reconcile job, left pending, claimed by "rec-w" (processing), or
// flagged stuck by its own ending (stuck).
func (c *tc) reconcilingWithRecIn(how string) (orig, rec *leasehold.JobRow) {
	c.Helper()
	held := c.expiredIn("recq", 3)
	res := c.rescue(c.d)
	if len(res) != 1 || res[0].ReconcileJobID == 0 {
		c.Fatalf("rescue of job %d = %+v; want it reconciling with a reconcile job", held.ID, res)
	}
	orig, recID := c.get(held.ID), res[0].ReconcileJobID
	switch how {
	case "pending":
		return orig, c.get(recID)
	case "processing":
		return orig, c.claimID(c.d, recID, "rec-w", liveTTL, false)
	}
	rec = c.claimID(c.d, recID, "rec-w", liveTTL, false)
	c.finish(token(rec.ID, "rec-w", rec.Attempt, statemachine.Ending{Outcome: leasehold.OutcomeFailed, Error: "provider down", Flag: true}))
	c.eq("the reconcile job flagged", c.get(rec.ID).State, leasehold.StateStuck)
	return orig, c.get(rec.ID)
}

// checkStranded checks that orig, reconciling when rec was cancelled or
// deleted (what), is stuck at the same attempt, its last_error and its
// expired attempt's resolution naming rec.
func (c *tc) checkStranded(orig, rec *leasehold.JobRow, what, how string) {
	c.Helper()
	got := c.get(orig.ID)
	c.eq(fmt.Sprintf("state of the job whose %s reconcile job was %s", how, what), got.State, leasehold.StateStuck)
	c.eq("its attempt", got.Attempt, orig.Attempt)
	want := fmt.Sprintf("reconcile job %d was %s", rec.ID, what)
	if !strings.Contains(got.LastError, want) {
		c.Errorf("last_error %q of job %d, want it to say %q", got.LastError, orig.ID, want)
	}
	h := c.attempts(orig.ID)
	if len(h) != 1 || !strings.Contains(h[0].Resolution, want) {
		c.Errorf("history of job %d: %s; want its attempt's resolution to say %q", orig.ID, fmtHistory(h), want)
	}
}

// testRetryJobAttemptGuard: a retry that names the attempt the caller
// saw (RetryParams.Attempt) retries the job only at that attempt, checked
// by the same UPDATE: a completed job that ran again since is refused
// with ErrJobChanging and left as it is, whatever its state; at its
// attempt, or with 0, it is retried.
func testRetryJobAttemptGuard(c *tc) {
	j := c.claimID(c.d, c.insert(job("q", "k"))[0].ID, "w", liveTTL, false)
	c.finish(fin(j, leasehold.OutcomeCompleted))
	if _, err := c.d.RetryJob(c.ctx, &driver.RetryParams{ID: j.ID, Completed: true, Attempt: 1}); err != nil {
		c.Fatalf("RetryJob(completed at attempt 1, seen at 1): %v", err)
	}
	j = c.claimID(c.d, j.ID, "w", liveTTL, false)
	c.eq("attempt of the job run again", j.Attempt, 2)
	c.finish(fin(j, leasehold.OutcomeCompleted))
	before := c.snap(j.ID)
	_, err := c.d.RetryJob(c.ctx, &driver.RetryParams{ID: j.ID, Completed: true, Attempt: 1})
	if !errors.Is(err, leasehold.ErrJobChanging) {
		c.Errorf("RetryJob(completed at attempt 2, seen at 1) = %v, want ErrJobChanging", err)
	}
	c.unchanged("a completed job retried from a stale attempt", before)

	failed := c.claimID(c.d, c.insert(job("q", "k"))[0].ID, "w", liveTTL, false)
	c.finish(fin(failed, leasehold.OutcomeFailed))
	before = c.snap(failed.ID)
	if _, err := c.d.RetryJob(c.ctx, &driver.RetryParams{ID: failed.ID, Attempt: 2}); !errors.Is(err, leasehold.ErrJobChanging) {
		c.Errorf("RetryJob(failed at attempt 1, seen at 2) = %v, want ErrJobChanging", err)
	}
	c.unchanged("a failed job retried from another attempt", before)

	for _, attempt := range []int{2, 0} {
		got, err := c.d.RetryJob(c.ctx, &driver.RetryParams{ID: j.ID, Completed: true, Attempt: attempt})
		if err != nil || got.State != leasehold.StatePending {
			c.Fatalf("RetryJob(completed at attempt 2, seen at %d) = %v, %v; want it pending", attempt, got, err)
		}
		j = c.claimID(c.d, j.ID, "w", liveTTL, false)
		c.finish(fin(j, leasehold.OutcomeCompleted))
	}
}
