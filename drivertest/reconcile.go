package drivertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/statemachine"
)

// reconcileTarget is where the reconcile jobs of queue "recq" go in the
// suite.
var reconcileTarget = statemachine.ReconcileTarget{Kind: leasehold.ReconcileKind, Queue: "rec", MaxAttempts: 5, Priority: 1}

// reconcileDecide is the watcher's policy in the suite: "flagq" flags,
// "recq" reconciles, the other queues requeue.
var reconcileDecide = statemachine.PolicyRescuer(statemachine.Policy{
	Flag:      []string{"flagq"},
	Reconcile: map[string]statemachine.ReconcileTarget{"recq": reconcileTarget},
})

// expiredIn returns a job of queue, claimed by "owner-x" with budget
// maxAttempts, whose lease has expired.
func (c *tc) expiredIn(queue string, maxAttempts int) *leasehold.JobRow {
	c.Helper()
	p := job(queue, "pay")
	p.MaxAttempts = maxAttempts
	j := c.claimID(c.d, c.insert(p)[0].ID, "owner-x", shortTTL, false)
	c.waitExpired(j)
	return j
}

// rescue runs one watcher pass with reconcileDecide on d.
func (c *tc) rescue(d driver.Driver) []*leasehold.RescuedJob {
	c.Helper()
	res, err := d.RescueExpired(c.ctx, &driver.RescueParams{Decide: reconcileDecide, Limit: 100})
	if err != nil {
		c.Fatalf("RescueExpired: %v", err)
	}
	return res
}

// reconcileJobs returns the reconcile jobs, by the id of the job each
// reconciles, failing on a job with two.
func (c *tc) reconcileJobs() map[int64]*leasehold.JobRow {
	c.Helper()
	out := map[int64]*leasehold.JobRow{}
	for _, j := range c.list(&leasehold.ListParams{Kind: leasehold.ReconcileKind, Limit: 1000}) {
		var a leasehold.ReconcileArgs
		if err := json.Unmarshal(j.Args, &a); err != nil {
			c.Fatalf("reconcile job %d args %s: %v", j.ID, j.Args, err)
		}
		if prev := out[a.JobID]; prev != nil {
			c.Errorf("job %d has two reconcile jobs: %d and %d", a.JobID, prev.ID, j.ID)
		}
		out[a.JobID] = j
	}
	return out
}

// testRescueReconcile: in a queue that reconciles, an expired lease
// becomes reconciling (lease cleared, run_at kept, not finished,
// last_error and the history row's lease_expired as for a requeue),
// whatever its budget, and exactly one reconcile job is inserted in the
// same transaction, carrying the job's id, expired attempt, idempotency
// key, kind and queue. So is a job whose cancel was requested (its
// attempt may have charged: the reconciler decides first), which keeps
// the request. A second pass changes nothing, and QueueStats and
// ListJobs show the new state.
func testRescueReconcile(c *tc) {
	plain, spent := c.expiredIn("recq", 3), c.expiredIn("recq", 1)
	cancelled := c.expiredIn("recq", 3)
	if _, err := c.d.CancelJob(c.ctx, cancelled.ID); err != nil {
		c.Fatalf("CancelJob(processing): %v", err)
	}
	cancelled = c.get(cancelled.ID)
	before := c.now()
	res := c.rescue(c.d)
	after := c.now()
	c.eq("jobs rescued", len(res), 3)
	recs := c.reconcileJobs()
	for _, r := range res {
		c.eq(fmt.Sprintf("job %d's new state", r.ID), r.NewState, leasehold.StateReconciling)
		if rec := recs[r.ID]; rec == nil || rec.ID != r.ReconcileJobID {
			c.Errorf("job %d: RescuedJob.ReconcileJobID %d, reconcile job %v", r.ID, r.ReconcileJobID, rec)
		}
	}
	for _, held := range []*leasehold.JobRow{plain, spent, cancelled} {
		c.checkRescued(held, leasehold.StateReconciling, before, after)
		c.checkReconcileJob(held, recs[held.ID])
	}
	if again := c.rescue(c.d); len(again) != 0 {
		c.Errorf("second pass moved %d jobs, want none", len(again))
	}
	c.eq("reconcile jobs after a second pass", len(c.reconcileJobs()), 3)
	c.checkReconcilingShown(plain.ID, spent.ID, cancelled.ID)
}

// checkReconcileJob checks rec, the reconcile job of held's expired
// attempt: pending in the target queue with its kind, budget and
// priority, args naming held, a unique key of its own.
func (c *tc) checkReconcileJob(held, rec *leasehold.JobRow) {
	c.Helper()
	if rec == nil {
		c.Errorf("job %d has no reconcile job", held.ID)
		return
	}
	var a leasehold.ReconcileArgs
	if err := json.Unmarshal(rec.Args, &a); err != nil {
		c.Fatalf("reconcile args %s: %v", rec.Args, err)
	}
	want := leasehold.ReconcileArgs{JobID: held.ID, Attempt: held.Attempt, IdempotencyKey: held.IdempotencyKey(),
		JobKind: held.Kind, JobQueue: held.Queue}
	c.eq(fmt.Sprintf("reconcile args of job %d", held.ID), a, want)
	c.eq("reconcile job state", rec.State, leasehold.StatePending)
	c.eq("reconcile job queue", rec.Queue, reconcileTarget.Queue)
	c.eq("reconcile job max_attempts", rec.MaxAttempts, reconcileTarget.MaxAttempts)
	c.eq("reconcile job priority", rec.Priority, reconcileTarget.Priority)
	if rec.UniqueKey == "" || rec.UUID == "" || rec.UUID == held.UUID {
		c.Errorf("reconcile job unique key %q uuid %q (job's %q): want a key and a UUID of its own", rec.UniqueKey, rec.UUID, held.UUID)
	}
}

// checkReconcilingShown checks that ListJobs filters reconciling jobs and
// that QueueStats counts them, in queue "recq".
func (c *tc) checkReconcilingShown(want ...int64) {
	c.Helper()
	got := c.list(&leasehold.ListParams{States: []leasehold.JobState{leasehold.StateReconciling}})
	c.eqIDs("ListJobs(reconciling)", ids(got), sorted(want...))
	stats, err := c.d.QueueStats(c.ctx)
	if err != nil {
		c.Fatalf("QueueStats: %v", err)
	}
	for _, s := range stats {
		if s.Queue == "recq" {
			c.eq("QueueStats recq Counts[reconciling]", s.Counts[leasehold.StateReconciling], int64(len(want)))
			return
		}
	}
	c.Errorf("QueueStats has no queue recq")
}

// testRescueReconcileConcurrent: two watchers on two connections racing
// over many expired leases of a reconciling queue move each job once and
// insert exactly one reconcile job per job.
func testRescueReconcileConcurrent(c *tc) {
	const n = 30
	ps := make([]*driver.InsertParams, n)
	for i := range ps {
		ps[i] = job("recq", "pay")
	}
	c.expireAll("owner-x", c.insert(ps...))
	drivers := []driver.Driver{c.d, c.second()}
	var (
		wg    sync.WaitGroup
		mu    sync.Mutex
		moved = map[int64]int{}
	)
	for _, d := range drivers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 3 {
				res, err := d.RescueExpired(c.ctx, &driver.RescueParams{Decide: reconcileDecide, Limit: 7})
				if err != nil {
					c.Errorf("RescueExpired: %v", err)
					return
				}
				mu.Lock()
				for _, r := range res {
					moved[r.ID]++
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	for len(moved) < n { // the passes may have left some: finish them
		res := c.rescue(c.d)
		if len(res) == 0 {
			break
		}
		for _, r := range res {
			moved[r.ID]++
		}
	}
	for id, k := range moved {
		if k != 1 {
			c.Errorf("job %d moved %d times", id, k)
		}
	}
	c.eq("jobs moved", len(moved), n)
	c.eq("reconcile jobs", len(c.reconcileJobs()), n)
}

// reconciling returns a reconciling job of queue "recq" and its reconcile
// job, claimed by "rec-w" for ttl.
func (c *tc) reconciling(ttl time.Duration) (orig, rec *leasehold.JobRow) {
	c.Helper()
	held := c.expiredIn("recq", 3)
	res := c.rescue(c.d)
	if len(res) != 1 || res[0].ReconcileJobID == 0 {
		c.Fatalf("rescue of job %d = %+v; want it reconciling with a reconcile job", held.ID, res)
	}
	return c.get(held.ID), c.claimID(c.d, res[0].ReconcileJobID, "rec-w", ttl, false)
}

// resolveParams is the resolution r of orig by rec, a lease of owner.
func resolveParams(orig, rec *leasehold.JobRow, owner string, t driver.Transition, text string) *driver.ResolveParams {
	return &driver.ResolveParams{ID: rec.ID, Owner: owner, LeaseAttempt: rec.Attempt,
		JobID: orig.ID, Attempt: orig.Attempt, Transition: t, Resolution: text,
		CancelledResolution: cancelledText(text)}
}

// cancelledText is the CancelledResolution resolveParams gives: only a
// job cancelled in place of pending records it.
func cancelledText(text string) string { return text + " (cancelled instead)" }

// resolution returns the transition of r.
func (c *tc) resolution(r statemachine.Resolution, delay time.Duration, note string) driver.Transition {
	c.Helper()
	t, err := statemachine.Resolve(r, delay, note)
	if err != nil {
		c.Fatalf("Resolve(%d): %v", r, err)
	}
	return t
}

// testResolve: each resolution of a reconciling job, written under the
// reconcile job's lease, moves the job as the state machine says (every
// column checked), records the resolution on the expired attempt's
// history row (which keeps lease_expired) and leaves the reconcile job's
// lease alone; a second resolution is refused with ErrNotReconciling.
func testResolve(c *tc) {
	cases := []struct {
		r     statemachine.Resolution
		delay time.Duration
		note  string
		state leasehold.JobState
	}{
		{statemachine.ResolveComplete, 0, "provider charged", leasehold.StateCompleted},
		{statemachine.ResolveRetry, time.Hour, "provider has no charge", leasehold.StatePending},
		{statemachine.ResolveSnooze, 2 * time.Hour, "", leasehold.StatePending},
		{statemachine.ResolveStuck, 0, "provider unsure", leasehold.StateStuck},
		{statemachine.ResolveFail, 0, "card declined", leasehold.StateFailed},
	}
	for _, rc := range cases {
		orig, rec := c.reconciling(liveTTL)
		recBefore := c.snap(rec.ID)
		text := fmt.Sprintf("resolution %d", rc.r)
		before := c.now()
		state, err := c.d.Resolve(c.ctx, nil, resolveParams(orig, rec, "rec-w", c.resolution(rc.r, rc.delay, rc.note), text))
		after := c.now()
		if err != nil {
			c.Fatalf("Resolve(%d): %v", rc.r, err)
		}
		c.eq(fmt.Sprintf("state Resolve(%d) returned", rc.r), state, rc.state)
		c.checkResolved(orig, rc.state, rc.r == statemachine.ResolveSnooze, rc.delay, rc.note, before, after)
		c.eq("resolution on the history", c.attempts(orig.ID)[0].Resolution, text)
		c.unchanged("the reconcile job after Resolve", recBefore)
		_, err = c.d.Resolve(c.ctx, nil, resolveParams(orig, rec, "rec-w", c.resolution(rc.r, rc.delay, rc.note), text))
		if !errors.Is(err, leasehold.ErrNotReconciling) {
			c.Errorf("second Resolve(%d) = %v, want ErrNotReconciling", rc.r, err)
		}
	}
}

// checkResolved checks orig (as it was reconciling) after a resolution
// to state, column by column.
func (c *tc) checkResolved(orig *leasehold.JobRow, state leasehold.JobState, free bool, delay time.Duration, note string, before, after time.Time) {
	c.Helper()
	got := c.get(orig.ID)
	w := *orig
	w.State = state
	if free {
		w.FreeAttempts++
	}
	if note != "" {
		w.LastError = note
	}
	if state == leasehold.StatePending {
		c.timeIn("resolved run_at", got.RunAt, before.Add(delay), after.Add(delay))
		w.RunAt = got.RunAt
	}
	if state.Finished() {
		c.timeIn("resolved finished_at", got.FinishedAt, before, after)
		w.FinishedAt = got.FinishedAt
	}
	c.sameJob(fmt.Sprintf("job %d resolved to %s", orig.ID, state), got, &w)
	as := c.attempts(orig.ID)
	if len(as) != 1 || as[0].Outcome != leasehold.OutcomeLeaseExpired {
		c.Errorf("history after resolution: %s, want the expired attempt, lease_expired", fmtAttempts(as))
	}
}

// testResolveFenced: a resolution whose reconcile lease is not held is
// refused with ErrLeaseLost and writes nothing: a wrong owner or
// attempt, a lease that expired (before anyone took it over), one taken
// over by another reconciler; and in a caller's transaction of each kind
// it commits or rolls back with it.
func testResolveFenced(c *tc) {
	orig, rec := c.reconciling(shortTTL)
	done := c.resolution(statemachine.ResolveComplete, 0, "")
	origBefore := c.snap(orig.ID)
	for what, p := range map[string]*driver.ResolveParams{
		"wrong owner":   resolveParams(orig, rec, "someone", done, "x"),
		"wrong attempt": {ID: rec.ID, Owner: "rec-w", LeaseAttempt: rec.Attempt + 1, JobID: orig.ID, Attempt: orig.Attempt, Transition: done},
	} {
		if _, err := c.d.Resolve(c.ctx, nil, p); !errors.Is(err, leasehold.ErrLeaseLost) {
			c.Errorf("Resolve with a %s = %v, want ErrLeaseLost", what, err)
		}
	}
	c.waitExpired(rec)
	if _, err := c.d.Resolve(c.ctx, nil, resolveParams(orig, rec, "rec-w", done, "x")); !errors.Is(err, leasehold.ErrLeaseLost) {
		c.Errorf("Resolve under an expired reconcile lease = %v, want ErrLeaseLost", err)
	}
	c.claimID(c.d, rec.ID, "rec-2", liveTTL, true)
	if _, err := c.d.Resolve(c.ctx, nil, resolveParams(orig, rec, "rec-w", done, "x")); !errors.Is(err, leasehold.ErrLeaseLost) {
		c.Errorf("Resolve by a reconciler whose lease was taken over = %v, want ErrLeaseLost", err)
	}
	c.unchanged("the reconciling job after refused resolutions", origBefore)
	if as := c.attempts(orig.ID); as[0].Resolution != "" {
		c.Errorf("refused resolutions recorded %q", as[0].Resolution)
	}
	for _, k := range c.h.TxKinds {
		c.checkResolveInTx(k)
	}
}

// checkResolveInTx: a resolution in a caller's transaction of kind k
// takes effect when it commits and not when it rolls back.
func (c *tc) checkResolveInTx(k TxKind) {
	c.Helper()
	orig, rec := c.reconciling(liveTTL)
	before := c.snap(orig.ID)
	p := resolveParams(orig, rec, "rec-w", c.resolution(statemachine.ResolveComplete, 0, ""), "in tx")
	tx, _, rollback := k.Begin(c.T, c.d)
	if _, err := c.d.Resolve(c.ctx, tx, p); err != nil {
		c.Fatalf("Resolve in %s: %v", k.Name, err)
	}
	if err := rollback(); err != nil {
		c.Fatalf("rollback: %v", err)
	}
	c.unchanged("the reconciling job after a rolled-back Resolve in "+k.Name, before)
	tx, commit, _ := k.Begin(c.T, c.d)
	if _, err := c.d.Resolve(c.ctx, tx, p); err != nil {
		c.Fatalf("Resolve in %s: %v", k.Name, err)
	}
	if err := commit(); err != nil {
		c.Fatalf("commit: %v", err)
	}
	c.eq("state after a committed Resolve in "+k.Name, c.get(orig.ID).State, leasehold.StateCompleted)
}

// testResolveStaleAttempt: a resolution decides the attempt its
// reconcile job was spawned for. After an operator retried a reconciling
// job and its next attempt expired into reconciling too, the first
// reconciler, its lease still held, is refused with ErrNotReconciling
// and writes nothing, neither on the job nor on either attempt's
// history row; the second attempt's reconciler then resolves it, on the
// second attempt's row.
func testResolveStaleAttempt(c *tc) {
	orig, rec := c.reconciling(liveTTL)
	if _, err := c.retry(c.ctx, orig.ID); err != nil {
		c.Fatalf("RetryJob of a reconciling job: %v", err)
	}
	c.eq("attempt of the claim after the retry", c.claimID(c.d, orig.ID, "owner-y", shortTTL, false).Attempt, 2)
	c.waitExpired(c.get(orig.ID))
	res := c.rescue(c.d)
	if len(res) != 1 || res[0].ReconcileJobID == 0 || res[0].ReconcileJobID == rec.ID {
		c.Fatalf("rescue of attempt 2 = %+v; want the job reconciling again, with a new reconcile job", res)
	}
	orig2 := c.get(orig.ID)
	c.eq("state of attempt 2 after its rescue", orig2.State, leasehold.StateReconciling)
	before := c.snap(orig.ID)
	done := c.resolution(statemachine.ResolveComplete, 0, "charged")
	if st, err := c.d.Resolve(c.ctx, nil, resolveParams(orig, rec, "rec-w", done, "stale")); !errors.Is(err, leasehold.ErrNotReconciling) {
		c.Errorf("Resolve of attempt 1 while attempt 2 reconciles = %q, %v; want ErrNotReconciling", st, err)
	}
	c.unchanged("the job after a resolution of its earlier attempt", before)

	rec2 := c.claimID(c.d, res[0].ReconcileJobID, "rec-2", liveTTL, false)
	if _, err := c.d.Resolve(c.ctx, nil, resolveParams(orig2, rec2, "rec-2", done, "current")); err != nil {
		c.Fatalf("Resolve of attempt 2 by its own reconciler: %v", err)
	}
	c.eq("state after the resolution of attempt 2", c.get(orig.ID).State, leasehold.StateCompleted)
	as := c.attempts(orig.ID)
	if len(as) != 2 {
		c.Fatalf("history after the resolution of attempt 2: %s; want two attempts", fmtAttempts(as))
	}
	c.eq("resolution on attempt 1", as[0].Resolution, "")
	c.eq("resolution on attempt 2", as[1].Resolution, "current")
}

// testOperatorOnReconciling: an operator may retry or cancel a
// reconciling job; its reconcile job's resolution then finds it no
// longer reconciling (ErrNotReconciling) and writes nothing.
func testOperatorOnReconciling(c *tc) {
	for _, op := range []struct {
		name  string
		act   func(context.Context, int64) (*leasehold.JobRow, error)
		state leasehold.JobState
	}{
		{"RetryJob", c.retry, leasehold.StatePending},
		{"CancelJob", c.d.CancelJob, leasehold.StateCancelled},
	} {
		orig, rec := c.reconciling(liveTTL)
		got, err := op.act(c.ctx, orig.ID)
		if err != nil || got.State != op.state {
			c.Fatalf("%s of a reconciling job = %v, %v; want it %s", op.name, got, err, op.state)
		}
		after := c.snap(orig.ID)
		_, err = c.d.Resolve(c.ctx, nil, resolveParams(orig, rec, "rec-w", c.resolution(statemachine.ResolveComplete, 0, ""), "x"))
		if !errors.Is(err, leasehold.ErrNotReconciling) {
			c.Errorf("Resolve after %s = %v, want ErrNotReconciling", op.name, err)
		}
		c.unchanged("the job after a refused resolution", after)
	}
}
