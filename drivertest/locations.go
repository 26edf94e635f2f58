package drivertest

import (
	"sync"
	"testing"

	"github.com/leasehold/leasehold/driver"
)

// Locations remembers where each driver of a harness was opened (a
// PostgreSQL URL, a SQLite path), so OpenSecond and TxKinds can reach the
// same database. The zero value is ready to use.
type Locations struct {
	mu sync.Mutex
	m  map[driver.Driver]string
}

// Set records that d was opened on loc.
func (l *Locations) Set(d driver.Driver, loc string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.m == nil {
		l.m = map[driver.Driver]string{}
	}
	l.m[d] = loc
}

// Get returns where d was opened, failing t when it was not recorded.
func (l *Locations) Get(t *testing.T, d driver.Driver) string {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	loc, ok := l.m[d]
	if !ok {
		t.Fatalf("driver %p was not opened by this harness", d)
	}
	return loc
}
