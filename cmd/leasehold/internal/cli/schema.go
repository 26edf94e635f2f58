package cli

import (
	"context"
	"errors"

	"github.com/leasehold/leasehold"
)

// CheckSchema refuses a database whose leasehold schema is not the
// version this tool was built for, before an operator command reads or
// writes it: a database never migrated (often --db, or a PostgreSQL URL's
// search_path, naming another place than the one the workers use), one
// an older leasehold left behind, or one a newer leasehold migrated,
// whose rows this tool could write wrongly; on PostgreSQL, also tables
// that search_path finds behind another schema (pgdriver's
// ErrSchemaElsewhere). The error says which, and what to run.
func (db *DB) CheckSchema(ctx context.Context) error {
	v, err := db.Driver.SchemaVersion(ctx)
	if err != nil {
		return Failf("read the schema version of %s: %w", db.Target, err)
	}
	err = v.Check()
	switch {
	case err == nil:
		return nil
	case v.Database == 0:
		err = Restate(err, "%s has no leasehold tables: run `leasehold migrate` to create them, or check --db (on PostgreSQL, the URL's search_path)",
			db.Target)
	case errors.Is(err, leasehold.ErrSchemaNotMigrated):
		err = Restate(err, "%s is at schema version %d and this leasehold needs %d: run `leasehold migrate`",
			db.Target, v.Database, v.Known)
	default:
		err = Restate(err, "%s was migrated by a newer leasehold (schema version %d; this one knows %d): use that version's tool",
			db.Target, v.Database, v.Known)
	}
	return &Error{Code: ExitFailure, Err: err}
}
