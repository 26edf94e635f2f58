package sqlitedriver_test

import (
	"database/sql"
	"testing"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/drivertest"
	"github.com/leasehold/leasehold/internal/testdb"
	"github.com/leasehold/leasehold/sqlitedriver"
	"github.com/leasehold/leasehold/sqlitedriver/sqlitetest"
)

// TestConformance runs the driver conformance suite on SQLite, each test
// on a fresh database file; OpenSecond opens the same file again, as a
// second process would. The client-level suite on SQLite runs in the root
// package (TestClientConformance there), so `go test .` covers the client.
func TestConformance(t *testing.T) { drivertest.RunDriver(t, sqlitetest.Harness()) }

// TestConformanceOneConnection runs the suite on Drivers from New, on a
// caller's *sql.DB with one connection: they have no reader connections,
// so a claim reads its jobs in its own transaction.
func TestConformanceOneConnection(t *testing.T) {
	h := sqlitetest.Harness()
	h.Name = "sqlite-new"
	paths := &drivertest.Locations{}
	h.Open = func(t *testing.T) driver.Driver {
		path := testdb.SQLitePath(t)
		d := newOnOneConn(t, path)
		paths.Set(d, path)
		return d
	}
	h.OpenSecond = func(t *testing.T, d driver.Driver) driver.Driver {
		path := paths.Get(t, d)
		d2 := newOnOneConn(t, path)
		paths.Set(d2, path)
		return d2
	}
	drivertest.RunDriver(t, h)
}

// newOnOneConn returns a migrated Driver from New on a *sql.DB of one
// connection on path, both closed when t ends.
func newOnOneConn(t *testing.T, path string) *sqlitedriver.Driver {
	t.Helper()
	db, err := sql.Open("sqlite", sqlitedriver.DSN(path))
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { _ = db.Close() })
	d, err := sqlitedriver.New(db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	if _, err := d.Migrate(t.Context()); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return d
}
