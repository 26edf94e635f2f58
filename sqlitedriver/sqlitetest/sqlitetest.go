// Package sqlitetest gives tests a real leasehold database with no setup: a
// migrated SQLite driver on a fresh file in the test's temporary directory.
//
// A library user's tests call Open for a driver to build a leasehold.Client
// on; leasehold's own tests call Harness to run the conformance suite
// (drivertest.RunDriver, drivertest.RunClient) against SQLite. Like
// net/http/httptest it is meant for tests only: every value it returns is
// closed when the test ends.
package sqlitetest

import (
	"context"
	"database/sql"
	"testing"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/drivertest"
	"github.com/leasehold/leasehold/internal/testdb"
	"github.com/leasehold/leasehold/sqlitedriver"
)

// Open returns a migrated driver on a new, empty SQLite file in a
// temporary directory; the driver is closed and the file removed when t
// ends. It fails t when the database cannot be opened or migrated.
func Open(t testing.TB) *sqlitedriver.Driver {
	t.Helper()
	return openPath(t, testdb.SQLitePath(t))
}

// OpenPath returns a migrated driver on the SQLite file at path, closed
// when t ends: called twice with one path, it gives two drivers on one
// file, as two processes open it.
func OpenPath(t testing.TB, path string) *sqlitedriver.Driver {
	t.Helper()
	return openPath(t, path)
}

// Harness returns the conformance suite's harness for SQLite, named
// "sqlite": each test gets a fresh database file (Open), OpenSecond opens
// the same file again as a second process would, and caller transactions
// are *sql.Tx on the driver's DB.
func Harness() drivertest.Harness {
	paths := &drivertest.Locations{}
	return drivertest.Harness{
		Name: "sqlite",
		Open: func(t *testing.T) driver.Driver {
			path := testdb.SQLitePath(t)
			d := openPath(t, path)
			paths.Set(d, path)
			return d
		},
		OpenSecond: func(t *testing.T, d driver.Driver) driver.Driver {
			path := paths.Get(t, d)
			d2 := openPath(t, path)
			paths.Set(d2, path)
			return d2
		},
		ResetIDs: func(t *testing.T, d driver.Driver) {
			exec(t, d, `DELETE FROM sqlite_sequence WHERE name = 'leasehold_jobs'`)
		},
		RecordMigration: func(t *testing.T, d driver.Driver, version int) {
			exec(t, d, `INSERT INTO leasehold_migrations (version, applied_at) VALUES (?, 0)`, version)
		},
		LoseClaim: func(t *testing.T, d driver.Driver, id int64) {
			exec(t, d, `UPDATE leasehold_jobs SET status = 'pending', attempt = attempt - 1, lease_owner = NULL,
				lease_until = NULL, claimed_at = NULL, heartbeat_at = NULL WHERE id = ?`, id)
		},
		TxKinds: []drivertest.TxKind{
			{Name: "sql.Tx", Begin: func(t *testing.T, d driver.Driver) (any, func() error, func() error) {
				tx, err := d.(*sqlitedriver.Driver).DB().BeginTx(t.Context(), nil)
				if err != nil {
					t.Fatalf("sqlitetest: BeginTx: %v", err)
				}
				t.Cleanup(func() { _ = tx.Rollback() })
				return tx, tx.Commit, tx.Rollback
			}, Complete: func(ctx context.Context, tx any, job *leasehold.JobRow) error {
				stx, _ := tx.(*sql.Tx) // a nil *sql.Tx for another type: refused
				return sqlitedriver.CompleteTx(ctx, stx, job)
			}},
		},
	}
}

// openPath opens and migrates a driver on path, closed when t ends.
func openPath(t testing.TB, path string) *sqlitedriver.Driver {
	t.Helper()
	d, err := sqlitedriver.Open(path)
	if err != nil {
		t.Fatalf("sqlitetest: sqlitedriver.Open: %v", err)
	}
	t.Cleanup(func() { _ = d.Close() })
	if _, err := d.Migrate(t.Context()); err != nil {
		t.Fatalf("sqlitetest: Migrate: %v", err)
	}
	return d
}

// exec runs one statement on d's database.
func exec(t *testing.T, d driver.Driver, query string, args ...any) {
	t.Helper()
	if _, err := d.(*sqlitedriver.Driver).DB().ExecContext(t.Context(), query, args...); err != nil {
		t.Fatalf("sqlitetest: %s: %v", query, err)
	}
}
