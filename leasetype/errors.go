package leasetype

import "errors"

// Errors shared by the client and its drivers. The root package re-exports
// each under the same name; branch on them with errors.Is.
var (
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
