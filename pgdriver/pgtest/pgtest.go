// Package pgtest gives tests a real leasehold database on PostgreSQL: a
// migrated driver on a new, empty schema of the server named by
// LEASEHOLD_TEST_DATABASE_URL, dropped when the test ends. Without that
// variable the test is skipped, or failed when LEASEHOLD_REQUIRE_POSTGRES
// is 1, so that a CI run cannot pass without PostgreSQL.
//
// It is the PostgreSQL counterpart of sqlitetest.Open, for tests only:
// every driver it returns is closed when the test ends.
package pgtest

import (
	"testing"

	"github.com/leasehold/leasehold/internal/testdb"
	"github.com/leasehold/leasehold/pgdriver"
)

// URL returns the URL of a new, empty schema on the test server (through
// search_path), dropped when t ends; it skips or fails t as the package
// documentation says when no server is configured.
func URL(t testing.TB) string {
	t.Helper()
	return testdb.PostgresURL(t)
}

// Open returns a migrated driver on a new schema (URL), closed when t
// ends.
func Open(t testing.TB) *pgdriver.Driver {
	t.Helper()
	return OpenURL(t, URL(t))
}

// OpenURL returns a migrated driver on url, closed when t ends: called
// twice with one URL, it gives two drivers on one schema, as two
// processes open it.
func OpenURL(t testing.TB, url string) *pgdriver.Driver {
	t.Helper()
	d, err := pgdriver.Open(t.Context(), url)
	if err != nil {
		t.Fatalf("pgtest: pgdriver.Open: %v", err)
	}
	t.Cleanup(func() { _ = d.Close() })
	if _, err := d.Migrate(t.Context()); err != nil {
		t.Fatalf("pgtest: Migrate: %v", err)
	}
	return d
}
