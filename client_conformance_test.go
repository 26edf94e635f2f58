package leasehold_test

import (
	"testing"

	"github.com/leasehold/leasehold/drivertest"
	"github.com/leasehold/leasehold/sqlitedriver/sqlitetest"
)

// TestClientConformance runs the client-level invariants (workers,
// heartbeats, the watcher, shutdown, transactional completion) against
// SQLite, each on a fresh database file, so that `go test .` exercises the
// client with no setup. The same suite runs against PostgreSQL in pgdriver
// (TestClientConformance/postgres), and the driver-level invariants in each
// driver's TestConformance.
func TestClientConformance(t *testing.T) { drivertest.RunClient(t, sqlitetest.Harness()) }
