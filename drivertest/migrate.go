package drivertest

import (
	"sync"

	"github.com/leasehold/leasehold"
)

// testMigrate checks that migrating an already migrated database, again
// and from two drivers at once, succeeds and keeps the data.
func testMigrate(c *tc) {
	j := c.insert(job("q", "k"))[0]
	for i := range 2 {
		if err := c.d.Migrate(c.ctx); err != nil {
			c.Fatalf("Migrate #%d on a migrated database: %v", i+1, err)
		}
	}
	d2 := c.second()
	var wg sync.WaitGroup
	for _, d := range []leasehold.Driver{c.d, d2, c.d, d2} {
		wg.Go(func() {
			if err := d.Migrate(c.ctx); err != nil {
				c.Errorf("concurrent Migrate: %v", err)
			}
		})
	}
	wg.Wait()
	c.sameJob("job after repeated Migrate", c.get(j.ID), j)
	c.claimID(c.d, j.ID, "w", liveTTL, false)
}
