package sqlitedriver_test

import (
	"testing"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/drivertest"
	"github.com/leasehold/leasehold/internal/testdb"
	"github.com/leasehold/leasehold/sqlitedriver"
)

// TestConformance runs the driver conformance suite on SQLite, each test
// on a fresh database file; OpenSecond opens the same file again, as a
// second process would.
func TestConformance(t *testing.T) { drivertest.RunDriver(t, sqliteHarness()) }

// TestClientConformance runs the client-level invariants on SQLite.
func TestClientConformance(t *testing.T) { drivertest.RunClient(t, sqliteHarness()) }

func sqliteHarness() drivertest.Harness {
	paths := &drivertest.Locations{}
	return drivertest.Harness{
		Name: "sqlite",
		Open: func(t *testing.T) leasehold.Driver {
			path := testdb.SQLitePath(t)
			d := openSQLite(t, path)
			paths.Set(d, path)
			return d
		},
		OpenSecond: func(t *testing.T, d leasehold.Driver) leasehold.Driver {
			d2 := openSQLite(t, paths.Get(t, d))
			paths.Set(d2, paths.Get(t, d))
			return d2
		},
		ResetIDs: func(t *testing.T, d leasehold.Driver) {
			sqliteExec(t, d, `DELETE FROM sqlite_sequence WHERE name = 'leasehold_jobs'`)
		},
		RecordMigration: func(t *testing.T, d leasehold.Driver, version int) {
			sqliteExec(t, d, `INSERT INTO leasehold_migrations (version, applied_at) VALUES (?, 0)`, version)
		},
		TxKinds: []drivertest.TxKind{
			{Name: "sql.Tx", Begin: func(t *testing.T, d leasehold.Driver) (any, func() error, func() error) {
				tx, err := d.(*sqlitedriver.Driver).DB().BeginTx(t.Context(), nil)
				if err != nil {
					t.Fatalf("BeginTx: %v", err)
				}
				t.Cleanup(func() { _ = tx.Rollback() })
				return tx, tx.Commit, tx.Rollback
			}},
		},
	}
}

// sqliteExec runs one statement on d's database.
func sqliteExec(t *testing.T, d leasehold.Driver, query string, args ...any) {
	t.Helper()
	if _, err := d.(*sqlitedriver.Driver).DB().ExecContext(t.Context(), query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

func openSQLite(t *testing.T, path string) *sqlitedriver.Driver {
	t.Helper()
	d, err := sqlitedriver.Open(path)
	if err != nil {
		t.Fatalf("sqlitedriver.Open: %v", err)
	}
	t.Cleanup(func() { _ = d.Close() })
	if _, err := d.Migrate(t.Context()); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return d
}
