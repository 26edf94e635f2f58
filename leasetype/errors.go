package leasetype

import (
	"errors"
	"fmt"
)

// Errors shared by the client and its drivers. The root package re-exports
// each under the same name; branch on them with errors.Is.
var (
	// ErrLeaseLost reports that a write made on behalf of a lease found no
	// row matching (id, status = 'processing', lease_owner, attempt): the
	// lease expired and was taken over, the job was cancelled, or it was
	// already finished. The write was refused and changed nothing. It is also
	// the cause of a handler context cancelled because its lease is gone.
	ErrLeaseLost = errors.New("leasehold: lease lost")

	// ErrLeaseNotRenewed is the cause of a handler context cancelled
	// because the worker gave its lease up: it could not renew the lease
	// within its safe window. It wraps ErrLeaseLost. The database may still
	// hold the lease, so an outcome the handler returns is still written,
	// fenced: it applies unless another worker took the lease over.
	ErrLeaseNotRenewed = fmt.Errorf("%w: not renewed within its safe window; the worker gave it up", ErrLeaseLost)

	// ErrJobCancelled is the cause of a handler context cancelled because an
	// operator cancelled the job while it ran.
	ErrJobCancelled = errors.New("leasehold: job cancelled")

	// ErrShuttingDown is the cause of a handler context cancelled because
	// the client is stopping and the handler outlived ShutdownTimeout (or
	// Stop's context). The client has given up on the run by then: whatever
	// the handler returns, nil included, it releases the job back to
	// pending without charging the attempt, or, in a queue with FlagStuck
	// or Reconcile, writes nothing and leaves the lease to expire for the
	// watcher.
	ErrShuttingDown = errors.New("leasehold: client shutting down")

	// ErrNotReconciling reports a resolution for a job that is no longer
	// reconciling at the reconcile job's attempt: it was resolved already
	// (by an earlier run of the reconcile job), retried or cancelled by an
	// operator, or deleted. Nothing was written; the reconcile job has
	// nothing left to decide.
	ErrNotReconciling = errors.New("leasehold: job not reconciling")

	// ErrSchemaTooNew reports a database migrated by a newer leasehold than
	// this one (a migration version this build does not embed): its
	// queries may not match the schema, so Start and Migrate refuse it. The
	// error is a *SchemaVersionError naming both versions.
	ErrSchemaTooNew = errors.New("leasehold: database schema is newer than this leasehold")

	// ErrSchemaNotMigrated reports a database whose schema is missing or
	// older than this leasehold needs: run Migrate first. Start refuses it.
	// The error is a *SchemaVersionError naming both versions.
	ErrSchemaNotMigrated = errors.New("leasehold: database schema is not migrated")
)
