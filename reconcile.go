package leasehold

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/engine"
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
	// again (from the database clock's now); it may not be negative for
	// them. Other actions ignore it, whatever its value.
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
// job only says which lease resolves: the lease is found by job's ID and
// Attempt, and the job resolved is the one the ReconcileArgs of the
// lease's own row name, as the client claimed it. The Args of job itself
// are not read, so a copy of the row with other args (an operator tool's,
// a reused JobRow) cannot resolve a job the lease does not reconcile.
//
// A resolution is the handler's to make: once the handler has returned, a
// call made under its lease (from a goroutine the handler left running)
// gets ErrLeaseLost and writes nothing, even while the lease's outcome
// is still being written, as CheckLease does. (A call that starts
// just as the handler returns may write in tx before it finds the
// handler gone; it gets ErrLeaseLost then too, and tx must roll back.)
//
// A resolution made here is reported as ResolveReconcile's is (an
// EventFinished of the reconciled job, counted in Stats), but only if tx
// commits, which the client knows only once the handler has returned: as
// for CompleteTx, the event waits until then, when the client reads the
// job's history once to tell whether the resolution is there. A
// resolution whose tx rolled back, or was still open when the handler
// returned, is not reported.
//
// A resolution of a job that commits on its own (ResolveReconcile) after
// one of the same job in a transaction of the same handler that rolled
// back is reported once: the fences let a single resolution of the
// expired attempt in, so the client drops the handler's earlier ones
// made in transactions for that job.
//
// It returns ErrUnsupportedTx for a nil or foreign tx (checked first),
// ErrNotInHandler when job is not a lease this client is running,
// ErrLeaseLost when that lease can no longer be relied on (see
// CheckLease) or its handler has returned, and ErrInvalidArgs when the
// lease's args are not ReconcileArgs, r is not a known action, or a retry
// or snooze has a negative Delay.
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
	l, args, err := c.resolvingLease(job)
	if err != nil {
		return err
	}
	t, text, err := resolutionOf(l.Row, args, r)
	if err != nil {
		return err
	}
	cancelled := text + cancelledInstead
	state, err := c.driver.Resolve(ctx, tx, &driver.ResolveParams{
		ID: l.Row.ID, Owner: c.owner, LeaseAttempt: l.Row.Attempt,
		JobID: args.JobID, Attempt: args.Attempt, Transition: t, Resolution: text, CancelledResolution: cancelled,
	})
	if err != nil {
		return fmt.Errorf("leasehold: resolve job %d attempt %d: %w", args.JobID, args.Attempt, err)
	}
	tr := txResolution{jobID: args.JobID, text: text}
	if state == StateCancelled {
		tr.cancelledText = cancelled
	}
	tr.ev, tr.reported = resolvedEvent(l.Row, args, r.Action, state)
	if err := c.reportResolution(l, tx, tr); err != nil {
		return err
	}
	c.wake(args.JobQueue)
	return nil
}

// resolvingLease returns the lease of job, a reconcile job this client is
// running, and the ReconcileArgs of the lease's own row, as the client
// claimed it: job serves only to find the lease (by ID and Attempt), so
// a copy of its row with other Args resolves what the lease reconciles.
// It returns ErrNotInHandler for a lease the client does not hold,
// ErrLeaseLost for one it can no longer rely on or whose handler has
// returned (engine.Lease.Usable), and ErrInvalidArgs for a lease whose
// args are not ReconcileArgs.
func (c *Client) resolvingLease(job *JobRow) (*engine.Lease, *ReconcileArgs, error) {
	l, err := c.runningLease(job)
	if err != nil {
		return nil, nil, err
	}
	if err := l.Usable(); err != nil {
		return nil, nil, err
	}
	var args ReconcileArgs
	if err := json.Unmarshal(l.Row.Args, &args); err != nil || args.JobID <= 0 {
		return nil, nil, fmt.Errorf("%w: job %d: args are not ReconcileArgs (%s)", ErrInvalidArgs, l.Row.ID, l.Row.Args)
	}
	return l, &args, nil
}

// resolutionOf returns the transition of resolution r, by reconcile job
// row, of the job args name, and the text its history records; an error
// wrapping ErrInvalidArgs for a bad note or resolution.
func resolutionOf(row *JobRow, args *ReconcileArgs, r Resolution) (driver.Transition, string, error) {
	if p := textProblem(r.Note, false); p != "" {
		return driver.Transition{}, "", invalid(ErrInvalidArgs, "note", "resolution note: %s", p)
	}
	r.Note = boundText(r.Note)
	t, err := statemachine.Resolve(statemachine.Resolution(r.Action), r.Delay, r.Note)
	if err != nil {
		return driver.Transition{}, "", fmt.Errorf("%w: resolution of job %d: %w", ErrInvalidArgs, args.JobID, err)
	}
	text := fmt.Sprintf("%s by reconcile job %d (attempt %d)", r.Action, row.ID, row.Attempt)
	if r.Note != "" {
		text += ": " + r.Note
	}
	return t, text, nil
}
