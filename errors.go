package leasehold

import (
	"errors"

	"github.com/leasehold/leasehold/internal/engine"
	"github.com/leasehold/leasehold/leasetype"
)

// Sentinel errors. Callers branch on them with errors.Is; the library wraps
// them with context using %w.
var (
	// ErrLeaseLost reports that a write made on behalf of a lease found no
	// row matching (id, status = 'processing', lease_owner, attempt): the
	// lease expired and was taken over, the job was cancelled, or it was
	// already finished. The write was refused and changed nothing. It is also
	// the cause of a handler context cancelled because its lease is gone.
	ErrLeaseLost = leasetype.ErrLeaseLost

	// ErrLeaseNotRenewed is the cause of a handler context cancelled
	// because the worker gave its lease up: it could not renew the lease
	// within its safe window (LeaseTTL - LeaseSafetyMargin since the last
	// renewal it sent), the database out of its reach for that long. It
	// wraps ErrLeaseLost, but the database may still hold the lease: an
	// outcome the handler returns is still written, fenced, and applies
	// unless another worker took the lease over meanwhile (a nil then
	// completes the job). A context cancelled because the lease is known
	// to be gone has ErrLeaseLost itself as its cause.
	ErrLeaseNotRenewed = leasetype.ErrLeaseNotRenewed

	// ErrJobCancelled is the cause of a handler context cancelled because an
	// operator cancelled the job while it ran.
	ErrJobCancelled = leasetype.ErrJobCancelled

	// ErrShuttingDown is the cause of a handler context cancelled because
	// the client is stopping and the handler outlived ShutdownTimeout (or
	// Stop's context). The client has given up on the run before it
	// cancels the context, and ignores whatever the handler then returns,
	// nil included: it releases the job back to pending (OutcomeReleased)
	// without charging the attempt, except in a queue with FlagStuck or
	// Reconcile, where it writes nothing (the handler may have been cut
	// off mid-effect) and leaves the lease to expire, for the watcher to
	// flag the job stuck or reconcile it. A job the handler completed with
	// CompleteTx in a transaction that committed stays completed.
	ErrShuttingDown = leasetype.ErrShuttingDown

	// ErrNotReconciling reports a resolution for a job that is no longer
	// reconciling at the reconcile job's attempt: it was resolved already
	// (by an earlier run of the reconcile job), retried or cancelled by an
	// operator, or deleted. Nothing was written; a reconcile job that gets
	// it has nothing left to decide and may return nil.
	ErrNotReconciling = leasetype.ErrNotReconciling

	// ErrHandlerExited is the error recorded for an attempt whose handler
	// ended its goroutine without returning or panicking (runtime.Goexit,
	// as t.FailNow does in a test): the attempt ends as one whose handler
	// returned this error, retried or failed by the job's retry budget.
	ErrHandlerExited = engine.ErrHandlerExited

	// ErrCompleteTxRolledBack is the error recorded for an attempt whose
	// handler returned nil after a CompleteTx whose transaction did not
	// commit: the job is not done, and the attempt is charged like any
	// failure, retried or failed by the job's retry budget.
	ErrCompleteTxRolledBack = engine.ErrCompleteTxRolledBack

	// ErrJobNotFound reports that no job has the given id.
	ErrJobNotFound = errors.New("leasehold: job not found")

	// ErrJobRunning reports an operator action that is not allowed while the
	// job is processing under a lease (for example retrying it).
	ErrJobRunning = errors.New("leasehold: job is processing")

	// ErrJobFinished reports an operator action on a job that is already in
	// a terminal state (completed, failed or cancelled) where that is not
	// allowed.
	ErrJobFinished = errors.New("leasehold: job already finished")

	// ErrJobCompleted reports an operator retry of a completed job that
	// did not ask for one: its handler ran to success, and running it
	// again repeats what it did outside the database (a payment charged
	// twice) unless the handler is idempotent. Client.RetryCompletedJob
	// retries it on purpose.
	ErrJobCompleted = errors.New("leasehold: job completed; retrying it runs its handler again")

	// ErrJobChanging reports an operator action (RetryJob, CancelJob,
	// DeleteJob) that found the job in another state each time it tried:
	// its conditional write matched nothing, yet the job, read again,
	// was in a state the action allows, three times in a row. The job is
	// changing state faster than the action can catch it (claimed and
	// finished again and again); nothing was written, and the action may
	// be tried again later. RetryCompletedJobAttempt returns it, at once,
	// for a job no longer at the attempt the caller saw: it ran again
	// since; read it again before asking anew.
	ErrJobChanging = errors.New("leasehold: job keeps changing state")

	// ErrJobNotFinished reports an operator action allowed only on a job in
	// a terminal state (completed, failed or cancelled), such as deleting
	// it, on a pending, stuck or reconciling one: cancel it first.
	ErrJobNotFinished = errors.New("leasehold: job not finished")

	// ErrUniqueKeyHeld reports an operator retry of a finished job whose
	// unique key another job holds now (a job of the
	// UniqueWhileUnfinished scope inserted once the first had finished):
	// two unfinished jobs would hold one key, so the retry is refused and
	// changes nothing. Let the other job finish, or cancel it, first.
	ErrUniqueKeyHeld = errors.New("leasehold: another job holds the job's unique key")

	// ErrInvalidKind reports an empty or malformed job kind. The library
	// returns it inside an *InvalidInputError, as it does the next three
	// for inserts, ListJobs filters and checkpoints; its other refusals
	// (an operator call's argument, a reconcile resolution) wrap
	// ErrInvalidArgs directly.
	ErrInvalidKind = errors.New("leasehold: invalid job kind")

	// ErrInvalidQueue reports an empty or malformed queue name.
	ErrInvalidQueue = errors.New("leasehold: invalid queue name")

	// ErrInvalidArgs reports an argument of an API call that the library
	// refuses: job arguments or metadata that are not a JSON object every
	// driver can store, a unique key that is not storable text, insert
	// options out of range, a ListJobs filter no job can match, a
	// checkpoint's name or data, a reconcile resolution. Most of these are
	// not a job's arguments, so its text says "invalid arguments"; the
	// error wrapping it names the refused input.
	ErrInvalidArgs = errors.New("leasehold: invalid arguments")

	// ErrPayloadTooLarge reports encoded job arguments, or job metadata,
	// larger than Config.MaxPayloadBytes, each number counted at its length
	// written out in full (PostgreSQL's jsonb returns 1e1000 as 1,001
	// digits).
	ErrPayloadTooLarge = errors.New("leasehold: job payload too large")

	// ErrUnknownKind reports a job kind for which no worker is registered
	// where one is required.
	ErrUnknownKind = errors.New("leasehold: no worker registered for kind")

	// ErrInvalidConfig reports a Config that cannot work, such as a
	// heartbeat interval not well below the lease TTL, or options of a
	// contrib package that cannot work (histogram buckets out of order in
	// contrib/prometheus).
	ErrInvalidConfig = errors.New("leasehold: invalid config")

	// ErrUnsupportedTx reports a transaction value of a type the driver
	// cannot use (see the driver's documentation for the accepted types),
	// or a nil one (such as a nil *sql.Tx) where a transaction is needed:
	// the write is refused rather than made outside any transaction.
	ErrUnsupportedTx = errors.New("leasehold: unsupported transaction type")

	// ErrClientStopped is returned by Start on a stopped client and by
	// operations that need a running client after Stop.
	ErrClientStopped = errors.New("leasehold: client stopped")

	// ErrClientStarted is returned by a second Start on a client that is
	// starting or running: one client runs one set of background work.
	ErrClientStarted = errors.New("leasehold: client already started")

	// ErrSchemaTooNew reports a database migrated by a newer leasehold than
	// this one: Start and Migrate refuse it. The error is a
	// *SchemaVersionError naming both versions.
	ErrSchemaTooNew = leasetype.ErrSchemaTooNew

	// ErrSchemaNotMigrated reports a database whose schema is missing or
	// older than this leasehold needs: run Migrate first. The error is a
	// *SchemaVersionError naming both versions.
	ErrSchemaNotMigrated = leasetype.ErrSchemaNotMigrated

	// ErrNotInHandler reports CompleteTx called with a job that is not
	// currently running under this client's lease, CheckLease or a
	// driver's typed CompleteTx called with a context that does not come
	// from a running handler.
	ErrNotInHandler = errors.New("leasehold: job is not running in this client")

	// ErrAlreadyCompleted reports a second CompleteTx for the same lease:
	// in the same transaction (through a savepoint of it too), where the
	// first one already completed the job and the completion commits with
	// the transaction, or in another after the first one's transaction
	// committed. The lease is not lost and nothing was written.
	ErrAlreadyCompleted = errors.New("leasehold: job already completed in this transaction")

	// ErrMiddlewareResults reports an insert middleware that returned
	// without the results of next, one per job, and without an error.
	ErrMiddlewareResults = errors.New("leasehold: insert middleware returned no result for every job")

	// ErrWorkersFrozen reports AddWorker on a Workers value that a client
	// has started with: a running client claims only the kinds registered
	// when it started, so register every worker before Client.Start.
	ErrWorkersFrozen = errors.New("leasehold: AddWorker after Client.Start: register every worker before starting")
)
