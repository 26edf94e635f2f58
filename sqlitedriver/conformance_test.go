package sqlitedriver_test

import (
	"testing"

	"github.com/leasehold/leasehold/drivertest"
	"github.com/leasehold/leasehold/sqlitedriver/sqlitetest"
)

// TestConformance runs the driver conformance suite on SQLite, each test
// on a fresh database file; OpenSecond opens the same file again, as a
// second process would. The client-level suite on SQLite runs in the root
// package (TestClientConformance there), so `go test .` covers the client.
func TestConformance(t *testing.T) { drivertest.RunDriver(t, sqlitetest.Harness()) }
