package leasehold

import (
	"context"
	"fmt"
	"time"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/engine"
	"github.com/leasehold/leasehold/internal/maintenance"
	"github.com/leasehold/leasehold/internal/statemachine"
)

// JobInfo is a job with its attempt history.
type JobInfo struct {
	*JobRow
	Attempts []*Attempt
}

// getJobReads bounds how many times GetJob reads a job that keeps
// changing under it.
const getJobReads = 5

// GetJob returns a job and its attempt history, or ErrJobNotFound.
//
// The job row and its history are two reads, and the running attempt's
// row is built from the job row, so a heartbeat or a finish between them
// would show the lease and the attempt disagreeing. GetJob reads the job
// again after its history and starts over when the lease or state moved
// in between (up to getJobReads times; then the last reads are returned).
func (c *Client) GetJob(ctx context.Context, id int64) (*JobInfo, error) {
	row, err := c.driver.GetJob(ctx, id)
	if err != nil {
		return nil, opErr(err, "get job %d", id)
	}
	var attempts []*Attempt
	for range getJobReads {
		if attempts, err = c.driver.ListAttempts(ctx, id); err != nil {
			return nil, opErr(err, "attempts of job %d", id)
		}
		after, err := c.driver.GetJob(ctx, id)
		if err != nil {
			return nil, opErr(err, "get job %d", id)
		}
		if sameLease(row, after) {
			break
		}
		row = after
	}
	return &JobInfo{JobRow: row, Attempts: attempts}, nil
}

// sameLease reports whether two reads of a job agree on its state, its
// attempt and its lease.
func sameLease(a, b *JobRow) bool {
	return a.State == b.State && a.Attempt == b.Attempt && a.LeaseOwner == b.LeaseOwner &&
		a.HeartbeatAt.Equal(b.HeartbeatAt) && a.LeaseUntil.Equal(b.LeaseUntil) && a.FinishedAt.Equal(b.FinishedAt)
}

// ListJobs returns jobs matching p (nil matches all), ordered by id
// (newest first with p.Desc), at most p.Limit of them: 100
// (driver.DefaultListLimit) when p is nil or p.Limit is 0, so page with
// p.AfterID (or p.BeforeID with p.Desc) to read every match. A filter no job can match (an unknown
// state, a malformed kind, queue or owner) is an *InvalidInputError.
func (c *Client) ListJobs(ctx context.Context, p *ListParams) ([]*JobRow, error) {
	if p == nil {
		p = &ListParams{}
	}
	if err := validateListParams(p); err != nil {
		return nil, err
	}
	rows, err := c.driver.ListJobs(ctx, p)
	if err != nil {
		return nil, fmt.Errorf("leasehold: list jobs: %w", err)
	}
	return rows, nil
}

// RetryJob makes a pending, stuck, reconciling, failed or cancelled job
// pending now with a fresh retry budget. It returns ErrJobRunning for a
// processing job, and ErrJobCompleted for a completed one: its handler
// ran to success, and running it again repeats its effects unless the
// handler is idempotent. RetryCompletedJob retries that one too. A job
// that changed state under each of the driver's tries (claimed and
// finished again and again) is ErrJobChanging: nothing was written, and
// the retry may be asked for again.
func (c *Client) RetryJob(ctx context.Context, id int64) (*JobRow, error) {
	return c.retry(ctx, &driver.RetryParams{ID: id})
}

// RetryCompletedJob is RetryJob that also retries a completed job, which
// then runs its handler again. The state is checked in the same
// statement that makes the job pending, so RetryJob never retries a job
// that completed after the caller looked at it; call this one only for a
// job meant to run again whatever its outcome.
func (c *Client) RetryCompletedJob(ctx context.Context, id int64) (*JobRow, error) {
	return c.retry(ctx, &driver.RetryParams{ID: id, Completed: true})
}

// RetryCompletedJobAttempt is RetryCompletedJob for a job the caller saw
// at attempt: the same statement that makes the job pending checks that
// the job is still at that attempt, so a confirmation given for one run
// never runs the job once more after someone else ran it again since (a
// form loaded before another operator's retry). A job at another attempt
// is refused with ErrJobChanging and left as it is; read it again before
// asking anew. An attempt of 0 is RetryCompletedJob.
func (c *Client) RetryCompletedJobAttempt(ctx context.Context, id int64, attempt int) (*JobRow, error) {
	if attempt < 0 {
		return nil, fmt.Errorf("%w: retry job %d: negative attempt %d", ErrInvalidArgs, id, attempt)
	}
	return c.retry(ctx, &driver.RetryParams{ID: id, Completed: true, Attempt: attempt})
}

// retry is RetryJob, RetryCompletedJob and RetryCompletedJobAttempt.
func (c *Client) retry(ctx context.Context, p *driver.RetryParams) (*JobRow, error) {
	row, err := c.driver.RetryJob(ctx, p)
	if err != nil {
		return nil, opErr(err, "retry job %d", p.ID)
	}
	c.wake(row.Queue)
	return row, nil
}

// CancelJob cancels a pending, stuck or reconciling job at once. A processing job is
// marked for cancellation: its handler's context is cancelled (cause
// ErrJobCancelled) at its next heartbeat and the job ends cancelled,
// unless the attempt completes or fails first (a handler that returns nil
// after its context ended completes the job: its work may be done); if
// its worker died, the watcher cancels it when the lease expires, except
// in a queue with Reconcile, where its reconciler decides first (completed
// if the work was done, cancelled where a retry or snooze would run it
// again; docs/reconciliation.md). A
// reconcile job (of a queue with Reconcile) whose job is still
// reconciling at the attempt it reconciles takes that job with it to
// stuck, in the same transaction, for an operator to retry or cancel: a
// job is never left reconciling with nothing to decide it. Its last_error
// and the attempt's resolution say which reconcile job was cancelled, and
// a reconciler still running that job gets ErrNotReconciling. A
// finished job is left alone and ErrJobFinished is returned with it. A
// job that changed state under each of the driver's tries is
// ErrJobChanging, as for RetryJob.
func (c *Client) CancelJob(ctx context.Context, id int64) (*JobRow, error) {
	row, err := c.driver.CancelJob(ctx, id)
	if err != nil {
		return row, opErr(err, "cancel job %d", id)
	}
	return row, nil
}

// PurgeFinished deletes completed, failed and cancelled jobs (and their
// history) of every queue, whatever Config.Queues, that finished more
// than olderThan ago, in batches, and returns how many it deleted. A deleted job's unique key is free again: an
// insert with it adds a new job (see Config.FinishedRetention).
func (c *Client) PurgeFinished(ctx context.Context, olderThan time.Duration) (int64, error) {
	if olderThan < 0 {
		return 0, fmt.Errorf("%w: negative age %v", ErrInvalidArgs, olderThan)
	}
	return maintenance.Purge(ctx, c.driver, olderThan)
}

// QueueStats returns per-queue counts, the age of the oldest ready job and
// the live leases. Its counts are exact, so it reads every job: on a
// large table prefer ActiveQueueStats.
func (c *Client) QueueStats(ctx context.Context) ([]*QueueStats, error) {
	qs, err := c.driver.QueueStats(ctx)
	if err != nil {
		return nil, fmt.Errorf("leasehold: queue stats: %w", err)
	}
	return qs, nil
}

// ActiveQueueStats returns QueueStats for the unfinished jobs of each
// queue that has some or is paused, at a cost that stays small at any
// table size: it reads indexes only, and counts each state of a queue
// exactly up to countLimit jobs (0 for driver.DefaultCountLimit). Beyond
// it the count is the database's estimate, never below countLimit, and
// QueueStats.Estimated lists the state: on PostgreSQL the planner's
// estimate, as fresh as the table's last ANALYZE; SQLite counts exactly.
// NeverClaimed is counted among the queue's first
// min(countLimit, driver.DefaultUnclaimedSample) due jobs in claim order.
// It is what dashboards and gauges should poll; the finished jobs' rates
// are in Throughput.
func (c *Client) ActiveQueueStats(ctx context.Context, countLimit int) ([]*QueueStats, error) {
	if countLimit < 0 {
		return nil, fmt.Errorf("%w: negative count limit %d", ErrInvalidArgs, countLimit)
	}
	qs, err := c.driver.ActiveQueueStats(ctx, &driver.ActiveStatsParams{CountLimit: countLimit})
	if err != nil {
		return nil, fmt.Errorf("leasehold: active queue stats: %w", err)
	}
	return qs, nil
}

// Throughput returns how many attempts finished in each minute of the
// last since (by the database clock), per queue and outcome, oldest
// first, as every client of the database recorded them: each client adds
// the attempts it ended every ThroughputInterval and when it stops, and
// the totals are kept for a day. The current minute is still filling.
func (c *Client) Throughput(ctx context.Context, since time.Duration) ([]*ThroughputBucket, error) {
	if since <= 0 {
		return nil, fmt.Errorf("%w: throughput since %v: want a positive duration", ErrInvalidArgs, since)
	}
	bs, err := c.driver.Throughput(ctx, since)
	if err != nil {
		return nil, fmt.Errorf("leasehold: throughput: %w", err)
	}
	return bs, nil
}

// CompleteTx completes job inside the caller's transaction tx, fenced by
// the lease this client holds, so the business writes and the completion
// commit together or not at all. Call it from the job's handler, then
// commit tx and return nil.
//
// This is the dynamic form: tx's type is checked at run time against what
// the driver accepts. From a handler, prefer the driver's typed function
// (pgdriver.CompleteTx for a pgx.Tx, pgdriver.CompleteSQLTx and
// sqlitedriver.CompleteTx for a *sql.Tx): it checks tx's type at compile
// time and finds the client in the handler's ctx, so no client variable
// is needed. They all share this implementation and its errors.
//
// It returns ErrLeaseLost when the lease is no longer this client's (the
// job was taken over): roll back then. It returns ErrUnsupportedTx for a
// nil transaction (a nil *sql.Tx or pgx.Tx included) or one the driver
// does not accept (checked first, in or outside a handler), ErrNotInHandler
// when job is not a lease this client is running, and ErrAlreadyCompleted
// when this lease was already completed in the same transaction (also
// through another object of it: a pgx savepoint of tx, or tx after a
// CompleteTx in one of its savepoints; that completion commits with tx),
// or by an earlier CompleteTx whose transaction committed (roll tx back
// and return); either way the lease is not lost and this call wrote
// nothing. A completion undone by a rollback to a savepoint (a pgx
// savepoint's Rollback, or ROLLBACK TO in SQL) is no longer there: a
// CompleteTx in the transaction then completes the job again. Once ctx is
// done it reaches no database and returns an error wrapping
// context.Cause(ctx), as FenceTx does.
//
// If tx rolls back after a successful CompleteTx and the handler returns
// nil, the attempt counts as failed: it is charged to the retry budget and
// retried after the RetryPolicy's delay, or the job fails once the budget
// is spent. A CompleteTx in a new transaction after a rollback is fine. If
// tx commits and the handler then returns an error, the job stays
// completed.
func (c *Client) CompleteTx(ctx context.Context, tx any, job *JobRow) error {
	if err := c.checkTx(tx); err != nil {
		return err
	}
	l, err := c.runningLease(job)
	if err != nil {
		return err
	}
	if l.CompletedIn(tx) && driver.TxEndedReaderOf(c.driver) == nil {
		// The driver cannot read in tx (alreadyCompleted): tell by the
		// transaction's identity alone, without the database.
		return fmt.Errorf("%w: job %d attempt %d", ErrAlreadyCompleted, job.ID, job.Attempt)
	}
	if err := leaseGone(ctx, l); err != nil {
		return fmt.Errorf("leasehold: complete job %d in tx: %w", job.ID, err)
	}
	ids, err := c.driver.Finish(ctx, tx, []*driver.FinishParams{{
		ID: job.ID, Owner: c.owner, Attempt: job.Attempt,
		Transition: statemachine.Finish(statemachine.Ending{Outcome: OutcomeCompleted}),
	}})
	if err != nil {
		return fmt.Errorf("leasehold: complete job %d in tx: %w", job.ID, err)
	}
	if len(ids) == 0 {
		if l.CompletedInTx() {
			// An earlier CompleteTx of this lease may have completed the
			// job, in tx (through tx or another object of it, a
			// savepoint) or in a transaction that committed: then the
			// job is completed by this very lease, not taken over, and
			// the attempt's one event comes from the history when the
			// handler returns (the completer's settle). One undone by a
			// rollback to a savepoint let the fence above match again.
			if done, why := c.alreadyCompleted(ctx, tx, l); done {
				return fmt.Errorf("%w: job %d attempt %d: %s", ErrAlreadyCompleted, job.ID, job.Attempt, why)
			}
		}
		// Nothing more to write for this lease. The refusal is reported
		// once, when the handler returns (or Stop cuts it off), with how
		// long it ran (the executor's refusedInTx).
		l.MarkLost()
		return fmt.Errorf("%w: job %d attempt %d owner %s", ErrLeaseLost, job.ID, job.Attempt, c.owner)
	}
	l.MarkCompletedIn(tx)
	return nil
}

// alreadyCompleted reports whether an earlier CompleteTx of l completed
// its job, for a CompleteTx in tx whose fenced write matched no row, and
// where, for the caller's error. The attempt's history row read in tx
// (completedInCallerTx) sees a completion tx holds uncommitted, made
// through tx or another object of the same transaction (a pgx savepoint
// of tx, or tx for a call in one of its savepoints); the read of what
// committed (completedEarlier) tells that one from a completion whose
// transaction committed, and decides alone when the read in tx does not
// show it. When the read in tx fails, a CompleteTx that succeeded in tx
// itself decides, as it did before the driver could read in tx.
func (c *Client) alreadyCompleted(ctx context.Context, tx any, l *engine.Lease) (done bool, where string) {
	const here = "the transaction already holds its completion, by an earlier CompleteTx in it or in one of its savepoints"
	inTx, read := c.completedInCallerTx(ctx, tx, l)
	if l.CompletedIn(tx) && (inTx || !read) {
		return true, here
	}
	committed, note := c.completedEarlier(ctx, l)
	switch {
	case committed && (note == "" || !inTx):
		return true, "an earlier CompleteTx of this lease committed" + note
	case inTx && !committed:
		return true, here
	case inTx:
		return true, "the transaction sees its completion by an earlier CompleteTx of this lease, in it, in one of its savepoints or in one that committed (what committed could not be read)"
	}
	return false, ""
}

// completedInCallerTx reports whether the history row of l's attempt, read
// in the caller's transaction tx (driver.TxEndedReader), records this owner
// ending it completed; read is false when the driver cannot read in tx or
// the read failed (tx aborted by an earlier error, its connection gone):
// the caller then decides as without it, so that a failed read never
// hides a lease taken over. The read runs under ctx alone: a deadline of
// its own could cut the caller's transaction off mid-statement.
func (c *Client) completedInCallerTx(ctx context.Context, tx any, l *engine.Lease) (done, read bool) {
	r := driver.TxEndedReaderOf(c.driver)
	if r == nil {
		return false, false
	}
	ended, err := r.EndedAttemptsTx(ctx, tx, []driver.LeaseRef{l.Ref()})
	if err != nil {
		return false, false
	}
	return c.endedCompleted(ended, l), true
}

// endedCompleted reports whether ended holds the history row of l's
// attempt and it records this owner ending it completed.
func (c *Client) endedCompleted(ended []driver.EndedAttempt, l *engine.Lease) bool {
	for _, a := range ended {
		if a.ID == l.Row.ID && a.Attempt == l.Row.Attempt {
			return a.Owner == c.owner && a.Outcome == OutcomeCompleted
		}
	}
	return false
}

// completedReadTimeout bounds completedEarlier's read of the history.
// It is short because on SQLite the read needs the one writer connection,
// which the caller's transaction may hold until CompleteTx returns: then
// the read cannot succeed, and the lease's own record decides.
const completedReadTimeout = time.Second

// completedEarlier reports whether an earlier CompleteTx of l, whose
// transaction then committed, completed l's job: the attempt's history
// row records this owner ending it completed (driver.EndedReader), as the
// completer settles a refused write after CompleteTx. When the history
// cannot be read (no EndedReader, or the read failed) it answers yes, as
// the completer and the heartbeater do for a lease that completed in a
// transaction, and note says so for the caller's error.
func (c *Client) completedEarlier(ctx context.Context, l *engine.Lease) (done bool, note string) {
	r := driver.EndedReaderOf(c.driver)
	if r == nil {
		return true, " (by the lease's record; the driver cannot read the history)"
	}
	rctx, cancel := context.WithTimeout(ctx, completedReadTimeout)
	defer cancel()
	ended, err := r.EndedAttempts(rctx, []driver.LeaseRef{l.Ref()})
	if err != nil {
		return true, fmt.Sprintf(" (by the lease's record; the history could not be read: %v)", err)
	}
	return c.endedCompleted(ended, l), ""
}

// runningLease returns the lease of job that this client's handler runs,
// or an error matching ErrNotInHandler (for a nil job too).
func (c *Client) runningLease(job *JobRow) (*engine.Lease, error) {
	if job == nil {
		return nil, fmt.Errorf("%w: nil job", ErrNotInHandler)
	}
	l := c.leases.Lookup(job.ID, job.Attempt)
	if l == nil {
		return nil, fmt.Errorf("%w: job %d attempt %d", ErrNotInHandler, job.ID, job.Attempt)
	}
	return l, nil
}

// RescueExpired runs one pass of the stuck watcher over every queue, not
// only the client's own (its background watcher looks at those alone):
// every processing job whose lease has expired (database clock), but
// those the client itself still holds (a handler running, or an outcome
// waiting to be written), goes back to pending, or to
// stuck in queues configured with FlagStuck, or to reconciling, with its
// reconcile job, in queues configured with Reconcile, or to failed when
// its retry budget is spent, or to cancelled when an operator asked for
// it (outside queues with Reconcile, where the reconciler decides first).
// Each batch locks the expired jobs, skipping any another watcher
// holds, and writes them fenced (by the lease still being expired too) in
// one transaction, so concurrent watchers are harmless. It returns the
// jobs moved; with an error, those its earlier batches moved (each batch
// commits on its own). Call it only from a client configured with the policy
// (FlagStuck, Reconcile) of every queue that has one, as `leasehold
// watch` is with its flags: other queues' expired leases go back to
// pending, or to failed when their budget is spent. The moves count in
// Throughput as expired leases: a client that is not running (never
// started, or stopped) writes them before it returns.
func (c *Client) RescueExpired(ctx context.Context) ([]*RescuedJob, error) {
	moved, err := c.rescuer.Pass(ctx)
	c.recordIfIdle(ctx)
	return moved, err
}

// DeleteJob deletes one completed, failed or cancelled job and its
// attempt history at once (PurgeFinished does the same by age), and
// returns the job as it was. It refuses an unfinished job, returning it
// with ErrJobRunning when it is processing and ErrJobNotFinished when it
// is pending, stuck or reconciling (cancel it first); a missing job is ErrJobNotFound,
// and one that changed state under each of the driver's tries
// ErrJobChanging, as for RetryJob. Deleting a reconcile job whose job is
// still reconciling at that attempt (its handler returned without
// resolving) sends that job to stuck in the same transaction, as
// CancelJob does.
func (c *Client) DeleteJob(ctx context.Context, id int64) (*JobRow, error) {
	row, err := c.driver.DeleteJob(ctx, id)
	if err != nil {
		return row, opErr(err, "delete job %d", id)
	}
	return row, nil
}
