package leasehold

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/statemachine"
	"github.com/leasehold/leasehold/leasetype"
)

// ReconcileKind is the default kind of reconcile jobs (ReconcilePolicy).
const ReconcileKind = leasetype.ReconcileKind

// ReconcileArgs are the arguments of a reconcile job: the reconciling
// job's id and expired attempt, the idempotency key that attempt passed to
// outside systems, and the job's kind and queue. Register a worker for
// them (AddWorker[ReconcileArgs]) on the clients that work the reconcile
// queue; its handler asks the outside system what really happened, by the
// idempotency key or by what the attempt's checkpoints recorded
// (Client.Checkpoints), and decides with ResolveReconcile.
type ReconcileArgs = leasetype.ReconcileArgs

// ResolveAction is what a reconciler decides for a reconciling job.
type ResolveAction int

// The actions of a Resolution.
const (
	// ResolveComplete: the expired attempt's work was done; the job
	// becomes completed.
	ResolveComplete ResolveAction = ResolveAction(statemachine.ResolveComplete)
	// ResolveRetry: the work was not done; the job becomes pending, to run
	// again after Resolution.Delay, the expired attempt charged to its
	// retry budget.
	ResolveRetry ResolveAction = ResolveAction(statemachine.ResolveRetry)
	// ResolveSnooze: the outcome is not known yet; the job becomes
	// pending, to run again after Resolution.Delay, the expired attempt
	// not charged.
	ResolveSnooze ResolveAction = ResolveAction(statemachine.ResolveSnooze)
	// ResolveStuck: a human must decide; the job becomes stuck, for an
	// operator to retry or cancel.
	ResolveStuck ResolveAction = ResolveAction(statemachine.ResolveStuck)
	// ResolveFail: the work cannot be done; the job becomes failed.
	ResolveFail ResolveAction = ResolveAction(statemachine.ResolveFail)
)

// String names the action as the history records it.
func (a ResolveAction) String() string {
	switch a {
	case ResolveComplete:
		return "completed"
	case ResolveRetry:
		return "retried"
	case ResolveSnooze:
		return "snoozed"
	case ResolveStuck:
		return "stuck"
	case ResolveFail:
		return "failed"
	}
	return fmt.Sprintf("ResolveAction(%d)", int(a))
}

// Resolution is a reconciler's decision on a reconciling job.
type Resolution struct {
	Action ResolveAction
	// Delay is how long a retried or snoozed job waits before it runs
	// again (from the database clock's now); ignored otherwise.
	Delay time.Duration
	// Note says why, in the job's history and, when not empty, as its
	// last_error; a note longer than MaxErrorText is cut there, as a
	// handler's error is.
	Note string
}

// ResolveReconcile applies r to the job that job, a reconcile job this
// client is running, reconciles, in a transaction of its own. See
// ResolveReconcileTx. Once it has committed, the resolution is reported
// as an EventFinished of the reconciled job (with Event.ResolvedBy) and
// counted in Stats, as the job reaching that outcome would be.
func (c *Client) ResolveReconcile(ctx context.Context, job *JobRow, r Resolution) error {
	return c.resolve(ctx, nil, job, r)
}

// ResolveReconcileTx applies r to the job that job, a reconcile job this
// client is running, reconciles (its ReconcileArgs name the job and the
// expired attempt), inside the caller's transaction tx, so the healing
// business writes and the decision commit together or not at all; the
// handler may complete its reconcile job in the same tx (CompleteTx).
//
// The write is fenced twice in one transaction: by the reconciling job
// (its id, status reconciling, the expired attempt) and by job's own
// lease (id, status processing, this client as owner, attempt, not
// expired by the database clock), whose row it locks until tx ends. A
// reconciler whose lease was lost or taken over gets ErrLeaseLost; when
// the job is no longer reconciling at that attempt (already resolved by
// an earlier run of the reconcile job, or retried, cancelled or deleted
// by an operator) it gets ErrNotReconciling, and has nothing left to
// decide. Either way nothing is written. The job's history keeps the
// expired attempt's lease_expired and records the resolution on it.
//
// A resolution made here is reported as ResolveReconcile's is (an
// EventFinished of the reconciled job, counted in Stats), but only if tx
// commits, which the client knows only once the handler has returned: as
// for CompleteTx, the event waits until then, when the client reads the
// job's history once to tell whether the resolution is there. A
// resolution whose tx rolled back, or was still open when the handler
// returned, is not reported.
//
// It returns ErrUnsupportedTx for a nil or foreign tx (checked first),
// ErrNotInHandler
// when job is not a lease this client is running, and ErrInvalidArgs when
// job's args are not ReconcileArgs or r is not a known action.
func (c *Client) ResolveReconcileTx(ctx context.Context, tx any, job *JobRow, r Resolution) error {
	if err := c.checkTx(tx); err != nil {
		return err
	}
	return c.resolve(ctx, tx, job, r)
}

// cancelledInstead ends the history's resolution of a job that a retry or
// snooze would have run again, cancelled instead because an operator had
// asked to cancel it.
const cancelledInstead = "; cancelled instead, as an operator had asked"

// resolve is ResolveReconcile and ResolveReconcileTx (tx nil: own
// transaction).
func (c *Client) resolve(ctx context.Context, tx any, job *JobRow, r Resolution) error {
	l, err := c.runningLease(job)
	if err != nil {
		return err
	}
	var args ReconcileArgs
	if err := json.Unmarshal(job.Args, &args); err != nil || args.JobID <= 0 {
		return fmt.Errorf("%w: job %d: args are not ReconcileArgs (%s)", ErrInvalidArgs, job.ID, job.Args)
	}
	if p := textProblem(r.Note, false); p != "" {
		return invalid(ErrInvalidArgs, "note", "resolution note: %s", p)
	}
	r.Note = boundText(r.Note)
	t, err := statemachine.Resolve(statemachine.Resolution(r.Action), r.Delay, r.Note)
	if err != nil {
		return fmt.Errorf("%w: resolution of job %d: %w", ErrInvalidArgs, args.JobID, err)
	}
	text := fmt.Sprintf("%s by reconcile job %d (attempt %d)", r.Action, job.ID, job.Attempt)
	if r.Note != "" {
		text += ": " + r.Note
	}
	cancelled := text + cancelledInstead
	state, err := c.driver.Resolve(ctx, tx, &driver.ResolveParams{
		ID: job.ID, Owner: c.owner, LeaseAttempt: job.Attempt,
		JobID: args.JobID, Attempt: args.Attempt, Transition: t, Resolution: text, CancelledResolution: cancelled,
	})
	if err != nil {
		return fmt.Errorf("leasehold: resolve job %d attempt %d: %w", args.JobID, args.Attempt, err)
	}
	if ev, ok := resolvedEvent(l.Row, &args, r.Action, state); ok {
		if tx == nil {
			c.events.emit(ev)
		} else {
			tr := txResolution{ev: ev, text: text}
			if state == StateCancelled {
				tr.cancelledText = cancelled
			}
			c.resolutions.add(l, tr)
		}
	}
	c.wake(args.JobQueue)
	return nil
}
