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

// TestConformanceCallerReader runs the suite on Drivers from
// NewWithReader, on a caller's writer and reader *sql.DB: a claim reads
// its jobs on the reader after its commit, as Open's Driver does.
func TestConformanceCallerReader(t *testing.T) {
	h := sqlitetest.Harness()
	h.Name = "sqlite-new-reader"
	paths := &drivertest.Locations{}
	open := func(t *testing.T, path string) driver.Driver {
		d := newWithReader(t, path)
		paths.Set(d, path)
		return d
	}
	h.Open = func(t *testing.T) driver.Driver { return open(t, testdb.SQLitePath(t)) }
	h.OpenSecond = func(t *testing.T, d driver.Driver) driver.Driver { return open(t, paths.Get(t, d)) }
	drivertest.RunDriver(t, h)
}

// newWithReader returns a migrated Driver from NewWithReader on a writer
// *sql.DB of one connection and a reader of ReaderConns on path, all
// closed when t ends.
func newWithReader(t *testing.T, path string) *sqlitedriver.Driver {
	t.Helper()
	db := openDB(t, sqlitedriver.DSN(path), 1)
	reader := openDB(t, sqlitedriver.ReaderDSN(path), sqlitedriver.ReaderConns)
	d, err := sqlitedriver.NewWithReader(t.Context(), db, reader)
	return migrated(t, d, err)
}

// migrated returns d, from New or NewWithReader (which returned err),
// migrated and closed when t ends.
func migrated(t *testing.T, d *sqlitedriver.Driver, err error) *sqlitedriver.Driver {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	if _, err := d.Migrate(t.Context()); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return d
}

// openDB opens dsn with at most conns connections, closed when t ends.
func openDB(t *testing.T, dsn string, conns int) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(conns)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// newOnOneConn returns a migrated Driver from New on a *sql.DB of one
// connection on path, both closed when t ends.
func newOnOneConn(t *testing.T, path string) *sqlitedriver.Driver {
	t.Helper()
	db := openDB(t, sqlitedriver.DSN(path), 1)
	d, err := sqlitedriver.New(db)
	return migrated(t, d, err)
}
