package leasehold

import (
	"context"
	"fmt"

	"github.com/leasehold/leasehold/leasetype"
)

// SchemaVersionError reports a database schema version this build cannot
// run against. errors.Is matches ErrSchemaTooNew when Database > Known (a
// newer leasehold migrated it: upgrade this one), and ErrSchemaNotMigrated
// when Database < Known (run Migrate).
type SchemaVersionError = leasetype.SchemaVersionError

// CheckSchema returns nil when the database's schema is the version this
// build's driver embeds, and a *SchemaVersionError otherwise
// (ErrSchemaTooNew: a newer leasehold migrated it, upgrade this build;
// ErrSchemaNotMigrated: run Migrate). Start checks it; a client that is
// never started (one that only inserts or operates, as an API server's
// or a dashboard's) checks nothing by itself, so call CheckSchema when it
// starts up: its writes to a schema a newer leasehold migrated could be
// wrong for that schema.
func (c *Client) CheckSchema(ctx context.Context) error { return c.checkSchema(ctx) }

// checkSchema refuses a database whose schema version differs from the one
// the driver embeds.
func (c *Client) checkSchema(ctx context.Context) error {
	v, err := c.driver.SchemaVersion(ctx)
	if err != nil {
		return fmt.Errorf("leasehold: read schema version: %w", err)
	}
	return v.Check()
}
