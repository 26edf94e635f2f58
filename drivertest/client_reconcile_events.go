package drivertest

import (
	"context"
	"errors"
	"time"

	"github.com/leasehold/leasehold"
)

// testResolutionEvents: a reconciler's resolution that committed is
// reported as the job reaching that outcome would be: an EventFinished
// of the reconciled job (its id, kind, queue, expired attempt and new
// state), with ResolvedBy the reconcile job, counted in Stats. One made
// on its own (ResolveReconcile) and one in a caller's transaction that
// committed (ResolveReconcileTx) are reported; one whose transaction
// rolled back is not.
func testResolutionEvents(e *clientEnv) {
	done, failed, rolledBack := e.deadLease("pay"), e.deadLease("pay"), e.deadLease("pay")
	kind := e.h.TxKinds[0]
	subscribed := make(chan struct{})
	var cRef *leasehold.Client
	ws := e.workers(func(context.Context, *leasehold.Job[testArgs]) error { return nil })
	err := leasehold.AddWorker(ws, leasehold.WorkFunc[leasehold.ReconcileArgs](func(ctx context.Context, job *leasehold.Job[leasehold.ReconcileArgs]) error {
		<-subscribed
		switch job.Args.JobID {
		case done.ID:
			return cRef.ResolveReconcile(ctx, job.JobRow, leasehold.Resolution{Action: leasehold.ResolveComplete})
		case failed.ID:
			tx, commit, rollback := kind.Begin(e.T, e.d)
			if err := cRef.ResolveReconcileTx(ctx, tx, job.JobRow, leasehold.Resolution{Action: leasehold.ResolveFail}); err != nil {
				return errors.Join(err, rollback())
			}
			return commit()
		default:
			tx, _, rollback := kind.Begin(e.T, e.d)
			if err := cRef.ResolveReconcileTx(ctx, tx, job.JobRow, leasehold.Resolution{Action: leasehold.ResolveRetry}); err != nil {
				return errors.Join(err, rollback())
			}
			return rollback()
		}
	}))
	if err != nil {
		e.Fatalf("AddWorker: %v", err)
	}
	cRef = e.newClient(e.d, ws, reconcileQueues)
	events, unsubscribe := cRef.Subscribe(leasehold.EventFinished)
	defer unsubscribe()
	close(subscribed)
	e.waitState(done.ID, leasehold.StateCompleted, 30*time.Second)
	e.waitState(failed.ID, leasehold.StateFailed, 30*time.Second)
	e.waitFor("the three reconcile jobs to end completed", 30*time.Second, func() bool {
		jobs, err := e.d.ListJobs(e.ctx, &leasehold.ListParams{Kind: leasehold.ReconcileKind,
			States: []leasehold.JobState{leasehold.StateCompleted}})
		if err != nil {
			e.Fatalf("ListJobs: %v", err)
		}
		return len(jobs) == 3
	})
	// Each handler reported its resolutions before its outcome was
	// written; the completer reports the outcomes just after writing them,
	// so the database can show the three reconcile jobs completed a moment
	// before Stats counts the last of them. Completed counts the three and
	// the resolution that completed a job.
	e.waitFor("the reconcile jobs' own events", 10*time.Second, func() bool { return cRef.Stats().Completed >= 3+1 })
	if j := e.waitState(rolledBack.ID, leasehold.StateReconciling, time.Second); j.Attempt != 1 {
		e.Errorf("job whose resolution rolled back: attempt %d, want it reconciling at attempt 1", j.Attempt)
	}
	e.checkResolvedEvents(drain(events), map[int64]leasehold.Outcome{
		done.ID: leasehold.OutcomeCompleted, failed.ID: leasehold.OutcomeFailed})
	if st := cRef.Stats(); st.Completed != 3+1 || st.Failed != 1 || st.Retried != 0 {
		e.Errorf("Stats: completed %d, failed %d, retried %d; want 4 (three reconcile jobs and one resolution), 1 and 0",
			st.Completed, st.Failed, st.Retried)
	}
}

// checkResolvedEvents checks the resolutions' events among evs (those
// with ResolvedBy set) against want (job id to outcome): one for each job
// of want, and no other.
func (e *clientEnv) checkResolvedEvents(evs []leasehold.Event, want map[int64]leasehold.Outcome) {
	e.Helper()
	for _, ev := range evs {
		if ev.ResolvedBy != nil {
			e.checkResolvedEvent(ev, want)
		}
	}
	for id, o := range want {
		e.Errorf("no EventFinished (%s, ResolvedBy set) for the resolution of job %d", o, id)
	}
}

// checkResolvedEvent checks ev, the EventFinished of a resolution,
// against want (job id to outcome), and removes its job from want.
func (e *clientEnv) checkResolvedEvent(ev leasehold.Event, want map[int64]leasehold.Outcome) {
	e.Helper()
	o, ok := want[ev.Job.ID]
	if !ok {
		e.Errorf("an EventFinished of a resolution of job %d (%s) that was not expected, or reported twice", ev.Job.ID, ev.Outcome)
		return
	}
	delete(want, ev.Job.ID)
	states := map[leasehold.Outcome]leasehold.JobState{
		leasehold.OutcomeCompleted: leasehold.StateCompleted, leasehold.OutcomeFailed: leasehold.StateFailed,
		leasehold.OutcomeCancelled: leasehold.StateCancelled}
	j := ev.Job
	if ev.Outcome != o || j.State != states[o] || j.Kind != "test" || j.Queue != "pay" || j.Attempt != 1 ||
		ev.ResolvedBy.Kind != leasehold.ReconcileKind || ev.Duration != 0 || ev.Err != nil {
		e.Errorf("resolution event of job %d: outcome %s, job %s/%s attempt %d state %s, resolved by %s, duration %v, err %v; "+
			"want %s, test/pay attempt 1 state %s, resolved by %s, no duration or error",
			j.ID, ev.Outcome, j.Kind, j.Queue, j.Attempt, j.State, ev.ResolvedBy.Kind, ev.Duration, ev.Err,
			o, states[o], leasehold.ReconcileKind)
	}
}

// drain returns the events waiting in ch.
func drain(ch <-chan leasehold.Event) []leasehold.Event {
	var out []leasehold.Event
	for {
		select {
		case ev := <-ch:
			out = append(out, ev)
		default:
			return out
		}
	}
}
