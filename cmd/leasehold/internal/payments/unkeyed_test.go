package payments

import (
	"context"
	"testing"

	"github.com/leasehold/leasehold/internal/testdb"
	"github.com/leasehold/leasehold/sqlitedriver"
)

// TestUnkeyedLedger: the ledger the chaos harness uses stores a second
// row for a payment instead of refusing it, so that a fencing failure
// shows as a duplicate.
func TestUnkeyedLedger(t *testing.T) {
	d, err := sqlitedriver.Open(testdb.SQLitePath(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	l, err := NewUnkeyedLedger(d.DB(), SQLite)
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Migrate(context.Background()); err != nil {
		t.Fatal(err)
	}
	record(t, l, "p-1", true)
	record(t, l, "p-1", true)
	if n, err := l.Count(context.Background(), "p-"); err != nil || n != 2 {
		t.Errorf("Count = %d, %v; want 2 rows for one payment", n, err)
	}
}
