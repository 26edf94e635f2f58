package pgdriver

import (
	"slices"
	"testing"
)

// TestStorageParameters checks the storage parameters of migration 009:
// both tables vacuumed and analyzed by a count of rows rather than a
// fraction of the table.
func TestStorageParameters(t *testing.T) {
	d, _ := newTestDriver(t)
	ctx := testCtx(t)
	byCount := []string{"autovacuum_vacuum_scale_factor=0", "autovacuum_vacuum_threshold=10000",
		"autovacuum_vacuum_insert_scale_factor=0", "autovacuum_vacuum_insert_threshold=10000",
		"autovacuum_analyze_scale_factor=0", "autovacuum_analyze_threshold=10000"}
	for _, table := range []string{"leasehold_jobs", "leasehold_attempts"} {
		var got []string
		if err := d.pool.QueryRow(ctx, "SELECT coalesce(reloptions, '{}') FROM pg_class WHERE oid = $1::regclass",
			table).Scan(&got); err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		for _, o := range byCount {
			if !slices.Contains(got, o) {
				t.Errorf("%s: reloptions %v lack %s", table, got, o)
			}
		}
	}
}
