package leasehold

import (
	"context"
	"fmt"
)

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
	return &SchemaVersionError{Database: v.Database, Known: v.Known}
}

// SchemaVersionError reports a database schema version this build cannot
// run against. errors.Is matches ErrSchemaTooNew when Database > Known (a
// newer leasehold migrated it: upgrade this one), and ErrSchemaNotMigrated
// when Database < Known (run Migrate).
type SchemaVersionError struct {
	// Database is the highest migration version applied to the database.
	Database int
	// Known is the highest migration version this build embeds.
	Known int
}

// Error names both versions and what to do.
func (e *SchemaVersionError) Error() string {
	switch {
	case e.Database > e.Known:
		return fmt.Sprintf("leasehold: database schema is version %d, this leasehold knows up to %d: upgrade leasehold",
			e.Database, e.Known)
	case e.Database == 0:
		return fmt.Sprintf("leasehold: database schema is not migrated (this leasehold needs version %d): run Migrate (leasehold migrate)",
			e.Known)
	default:
		return fmt.Sprintf("leasehold: database schema is version %d, this leasehold needs version %d: run Migrate (leasehold migrate)",
			e.Database, e.Known)
	}
}

// Unwrap returns ErrSchemaTooNew or ErrSchemaNotMigrated.
func (e *SchemaVersionError) Unwrap() error {
	if e.Database > e.Known {
		return ErrSchemaTooNew
	}
	return ErrSchemaNotMigrated
}

// checkSchema refuses a database whose schema version differs from the one
// the driver embeds.
func (c *Client) checkSchema(ctx context.Context) error {
	v, err := c.driver.SchemaVersion(ctx)
	if err != nil {
		return fmt.Errorf("leasehold: read schema version: %w", err)
	}
	return v.Check()
}
