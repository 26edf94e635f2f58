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

// checkSchema refuses a database whose schema version differs from the one
// the driver embeds.
func (c *Client) checkSchema(ctx context.Context) error {
	v, err := c.driver.SchemaVersion(ctx)
	if err != nil {
		return fmt.Errorf("leasehold: read schema version: %w", err)
	}
	return v.Check()
}
