package statemachine

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/leasetype"
)

// ReconcileTarget says where the reconcile job of a queue that reconciles
// expired leases goes: its kind, queue, retry budget and priority.
type ReconcileTarget struct {
	Kind        string
	Queue       string
	MaxAttempts int
	Priority    int
}

// Policy is what the stuck watcher does with the expired leases of each
// queue: queues in Flag become stuck, queues in Reconcile reconciling
// with a reconcile job, the others pending.
type Policy struct {
	Flag      []string
	Reconcile map[string]ReconcileTarget
}

// PolicyRescuer returns the RescueParams.Decide of a watcher with policy
// p. A reconcile job (see Reconciler: known by its kind or by the shape
// of its row, whatever policy this watcher holds) is never reconciled
// itself, so reconciliation cannot feed on itself: it is rescued as any
// job of its queue, but never failed (RescueReconciler).
func PolicyRescuer(p Policy) func(*leasetype.JobRow) driver.Transition {
	flag := make(map[string]bool, len(p.Flag))
	for _, q := range p.Flag {
		flag[q] = true
	}
	flagged := Rescuer(p.Flag)
	reconciler := Reconciler(p.Reconcile)
	return func(job *leasetype.JobRow) driver.Transition {
		t, ok := p.Reconcile[job.Queue]
		switch {
		case reconciler(job):
			return RescueReconciler(job, flag[job.Queue])
		case ok:
			return Reconcile(job, t)
		default:
			return flagged(job)
		}
	}
}

// Reconciler returns whether a job row is that of a reconcile job: of
// the default ReconcileKind or the kind of one of targets, or of any kind
// when the row has the shape of a spawned reconcile job (spawned). The
// kinds alone are not enough: a process may work a reconcile queue without
// the policy of the queue whose expired leases fill it (that policy is
// only required of the processes that work the reconciled queue), and it
// must not fail those reconcile jobs all the same. The kinds still
// recognise a row that lacks the spawned shape.
func Reconciler(targets map[string]ReconcileTarget) func(*leasetype.JobRow) bool {
	kinds := map[string]bool{leasetype.ReconcileKind: true}
	for _, t := range targets {
		kinds[t.Kind] = true
	}
	return func(job *leasetype.JobRow) bool { return kinds[job.Kind] || spawned(job) }
}

// reconcileKeyPrefix begins the unique key of every reconcile job.
const reconcileKeyPrefix = "reconcile:"

// reconcileKey is the unique key of the reconcile job of the attempt of
// the job whose idempotency key is idem.
func reconcileKey(idem string, attempt int) string {
	return reconcileKeyPrefix + idem + ":" + strconv.Itoa(attempt)
}

// spawned reports whether job has the shape every reconcile job is
// inserted with (reconcileJob), whatever its kind: args that decode as
// leasetype.ReconcileArgs naming a job (JobID > 0, an attempt, a queue,
// an idempotency key) and the unique key built from them. A user's job
// would need that key and those args both to pass for one; a row without
// the key's prefix costs no decoding.
func spawned(job *leasetype.JobRow) bool {
	if !strings.HasPrefix(job.UniqueKey, reconcileKeyPrefix) {
		return false
	}
	var a leasetype.ReconcileArgs
	if err := json.Unmarshal(job.Args, &a); err != nil {
		return false
	}
	if a.JobID <= 0 || a.Attempt <= 0 || a.JobQueue == "" || a.IdempotencyKey == "" {
		return false
	}
	return job.UniqueKey == reconcileKey(a.IdempotencyKey, a.Attempt)
}

// RescueReconciler returns the transition of a reconcile job whose lease
// expired: as Rescue's, but stuck where Rescue would fail it (its retry
// budget spent). A reconcile job is the only thing that decides its
// reconciling job, so it never ends failed: it waits, stuck, for an
// operator to run it again or to settle the job it reconciles by hand.
func RescueReconciler(job *leasetype.JobRow, flagged bool) driver.Transition {
	return Rescue(job, flagged || job.ChargedAttempts() >= job.MaxAttempts)
}

// Reconcile returns the transition of job, a processing job whose lease
// expired in a queue that reconciles: reconciling, whatever its retry
// budget and even when an operator asked to cancel it (the expired
// attempt may have had an effect that a blind failure or cancellation
// would hide), with a reconcile job of target inserted with the move.
// The cancel request stays on the job: a resolution that would run it
// again cancels it instead (driver.Driver Resolve). The attempt is
// charged, run_at kept, and last_error and the attempt row say whose
// lease expired, as Rescue does; the attempt row ends with lease_expired.
func Reconcile(job *leasetype.JobRow, target ReconcileTarget) driver.Transition {
	t := Rescue(job, false)
	t.State, t.Finished = leasetype.StateReconciling, false
	t.Spawn = reconcileJob(job, target)
	return t
}

// reconcileJob is the reconcile job of job's expired attempt. Its unique
// key names the job by its UUID (ids can be reissued) and the attempt, so
// that one expiry never has two reconcile jobs; with its args, it is also
// how any process knows the row for a reconcile job (spawned).
func reconcileJob(job *leasetype.JobRow, target ReconcileTarget) *driver.InsertParams {
	args, err := json.Marshal(leasetype.ReconcileArgs{
		JobID: job.ID, Attempt: job.Attempt, IdempotencyKey: job.IdempotencyKey(),
		JobKind: job.Kind, JobQueue: job.Queue,
	})
	if err != nil { // a struct of strings and integers always encodes
		panic(fmt.Sprintf("statemachine: encode reconcile args: %v", err))
	}
	return &driver.InsertParams{
		Kind: target.Kind, Queue: target.Queue, Args: args,
		MaxAttempts: target.MaxAttempts, Priority: target.Priority,
		UniqueKey: reconcileKey(job.IdempotencyKey(), job.Attempt),
		Notify:    true,
	}
}

// Resolution is what a reconciler decides for a reconciling job.
type Resolution int

// The resolutions of a reconciling job.
const (
	// ResolveComplete: the expired attempt's work was done; the job is
	// completed.
	ResolveComplete Resolution = iota + 1
	// ResolveRetry: the work was not done; the job runs again after
	// Delay, the expired attempt charged to its budget.
	ResolveRetry
	// ResolveSnooze: not known yet; the job runs again after Delay, the
	// expired attempt not charged.
	ResolveSnooze
	// ResolveStuck: a human must decide; the job is stuck.
	ResolveStuck
	// ResolveFail: the work cannot be done; the job fails.
	ResolveFail
)

// Resolve returns the transition of a reconciling job resolved as r,
// after delay (retry and snooze only; ignored, whatever its value, for
// the others), with note as the job's last_error when it is not empty
// (kept otherwise). It returns an error for an unknown resolution, or a
// retry or snooze with a negative delay.
func Resolve(r Resolution, delay time.Duration, note string) (driver.Transition, error) {
	t := driver.Transition{KeepRunAt: true, KeepLastError: note == "", LastError: note,
		Outcome: leasetype.OutcomeLeaseExpired}
	switch r {
	case ResolveComplete:
		t.State = leasetype.StateCompleted
	case ResolveRetry, ResolveSnooze:
		if delay < 0 {
			return driver.Transition{}, fmt.Errorf("negative delay %v", delay)
		}
		t.State, t.KeepRunAt, t.Delay, t.FreeAttempt = leasetype.StatePending, false, delay, r == ResolveSnooze
	case ResolveStuck:
		t.State = leasetype.StateStuck
	case ResolveFail:
		t.State = leasetype.StateFailed
	default:
		return driver.Transition{}, fmt.Errorf("unknown resolution %d", r)
	}
	t.Finished = t.State.Finished()
	return t, nil
}
