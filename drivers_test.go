package leasehold_test

import (
	"testing"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/pgdriver/pgtest"
	"github.com/leasehold/leasehold/sqlitedriver/sqlitetest"
)

// eachDriver runs test on a fresh SQLite database and on a fresh
// PostgreSQL schema (skipped without LEASEHOLD_TEST_DATABASE_URL, failed
// instead when LEASEHOLD_REQUIRE_POSTGRES=1).
func eachDriver(t *testing.T, test func(t *testing.T, d driver.Driver)) {
	t.Run("sqlite", func(t *testing.T) { test(t, sqlitetest.Open(t)) })
	t.Run("postgres", func(t *testing.T) { test(t, pgtest.Open(t)) })
}
