package leasetype

import "fmt"

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
