package driver

import "github.com/leasehold/leasehold/leasetype"

// MigrateResult reports what Driver.Migrate did, so that a caller can say
// "already at version N" or "migrated to version N".
type MigrateResult struct {
	// From is the schema version the database had before Migrate, 0 when
	// it was never migrated.
	From int
	// To is the schema version after Migrate.
	To int
	// Applied counts the migrations this call applied; 0 when the
	// database was already current (or another process migrated it first).
	Applied int
}

// SchemaVersion is where a database's schema stands against the migrations
// a driver embeds. A client only runs against a schema it knows exactly:
// older lacks columns its queries read, newer may have changed them.
type SchemaVersion struct {
	// Database is the highest migration version applied to the database,
	// 0 when it was never migrated.
	Database int
	// Known is the highest migration version this build of the driver
	// embeds.
	Known int
}

// Check returns nil when the database is at Known, and a
// *SchemaVersionError otherwise (matching ErrSchemaTooNew or
// ErrSchemaNotMigrated).
func (v *SchemaVersion) Check() error {
	if v.Database == v.Known {
		return nil
	}
	return &leasetype.SchemaVersionError{Database: v.Database, Known: v.Known}
}
