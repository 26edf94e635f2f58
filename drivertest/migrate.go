package drivertest

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// schemaVersion reads d's schema version.
func (c *tc) schemaVersion(d driver.Driver) *driver.SchemaVersion {
	c.Helper()
	v, err := d.SchemaVersion(c.ctx)
	if err != nil {
		c.Fatalf("SchemaVersion: %v", err)
	}
	return v
}

// testMigrate checks that migrating an already migrated database, again
// and from two drivers at once, succeeds, applies nothing, reports the
// current version, and keeps the data.
func testMigrate(c *tc) {
	j := c.insert(job("q", "k"))[0]
	v := c.schemaVersion(c.d)
	if v.Known < 1 || v.Database != v.Known {
		c.Fatalf("SchemaVersion of a migrated database = %+v, want Database = Known >= 1", *v)
	}
	want := driver.MigrateResult{From: v.Known, To: v.Known, Applied: 0}
	for i := range 2 {
		res, err := c.d.Migrate(c.ctx)
		if err != nil {
			c.Fatalf("Migrate #%d on a migrated database: %v", i+1, err)
		}
		c.eq("Migrate result on a migrated database", *res, want)
	}
	d2 := c.second()
	var wg sync.WaitGroup
	for _, d := range []driver.Driver{c.d, d2, c.d, d2} {
		wg.Go(func() {
			if res, err := d.Migrate(c.ctx); err != nil {
				c.Errorf("concurrent Migrate: %v", err)
			} else if *res != want {
				c.Errorf("concurrent Migrate result = %+v, want %+v", *res, want)
			}
		})
	}
	wg.Wait()
	c.sameJob("job after repeated Migrate", c.get(j.ID), j)
	c.claimID(c.d, j.ID, "w", liveTTL, false)
}

// testSchemaTooNewRefused checks that a database migrated by a newer
// leasehold (a migration version this driver does not embed) is refused by
// Migrate and by Client.Start with ErrSchemaTooNew, naming both versions.
func testSchemaTooNewRefused(c *tc) {
	if c.h.RecordMigration == nil {
		c.Skip("harness has no RecordMigration")
	}
	known := c.schemaVersion(c.d).Known
	d2 := c.second()
	const newer = 99
	c.h.RecordMigration(c.T, c.d, newer)
	c.eq("SchemaVersion after a newer migration", *c.schemaVersion(c.d), driver.SchemaVersion{Database: newer, Known: known})

	check := func(what string, err error) {
		c.Helper()
		var verr *leasehold.SchemaVersionError
		switch {
		case !errors.Is(err, leasehold.ErrSchemaTooNew):
			c.Errorf("%s on schema version %d: %v, want ErrSchemaTooNew", what, newer, err)
		case !errors.As(err, &verr) || verr.Database != newer || verr.Known != known:
			c.Errorf("%s: error %v is not a *SchemaVersionError{%d, %d}", what, err, newer, known)
		case !strings.Contains(err.Error(), strconv.Itoa(newer)) || !strings.Contains(err.Error(), strconv.Itoa(known)):
			c.Errorf("%s: error %q does not name versions %d and %d", what, err, newer, known)
		}
	}
	res, err := c.d.Migrate(c.ctx)
	check("Migrate", err)
	if res != nil {
		c.Errorf("Migrate on a newer schema returned %+v, want nil", *res)
	}
	check("Migrate on a second driver", errOf(d2.Migrate(c.ctx)))

	client, err := leasehold.NewClient(leasehold.Config{Driver: c.d})
	if err != nil {
		c.Fatalf("NewClient: %v", err)
	}
	err = client.Start(c.ctx)
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = client.Stop(ctx)
	}
	check("Client.Start", err)
	check("Client.Migrate", client.Migrate(c.ctx))
}

// errOf returns the error of a two-result call.
func errOf[T any](_ T, err error) error { return err }
