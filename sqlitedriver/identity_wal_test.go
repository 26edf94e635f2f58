package sqlitedriver

import (
	"context"
	"testing"
	"time"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/testdb"
)

// TestInterruptedStatementKeepsTheWAL: a statement its context ends is
// interrupted, and database/sql then closes the connection it ran on. On
// a Driver whose reader connections were never opened, that was the last
// connection to the file, and SQLite removed the -wal file at its close
// (at once when everything was checkpointed): every later call failed
// with ErrFileReplaced, though no one had touched the file.
func TestInterruptedStatementKeepsTheWAL(t *testing.T) {
	d := openPath(t, testdb.SQLitePath(t))
	insert(t, d, job(`{}`)) // records the -wal file's identity
	if _, err := d.DB().ExecContext(testCtx(t), "PRAGMA wal_checkpoint(PASSIVE)"); err != nil {
		t.Fatalf("wal_checkpoint: %v", err)
	}
	ctx, cancel := context.WithTimeout(testCtx(t), 50*time.Millisecond)
	defer cancel()
	rows, err := d.DB().QueryContext(ctx, `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c)
		SELECT count(*) FROM c`)
	if err == nil {
		_ = rows.Close()
		t.Fatal("the endless statement returned before its context ended")
	}
	t.Logf("writer connections open after the interrupt: %d", d.DB().Stats().OpenConnections)
	if err := d.CheckFile(); err != nil {
		t.Errorf("CheckFile after an interrupted statement: %v", err)
	}
	if _, err := d.Insert(testCtx(t), nil, []*driver.InsertParams{job(`{}`)}); err != nil {
		t.Errorf("Insert after an interrupted statement: %v", err)
	}
}

// TestCloseClosesThePinnedConnection: Close closes the connection Open
// keeps open for the -wal file, and returns once it is closed.
func TestCloseClosesThePinnedConnection(t *testing.T) {
	d, err := Open(testdb.SQLitePath(t))
	if err != nil {
		t.Fatal(err)
	}
	if n := d.pin.db.Stats().OpenConnections; n != 1 {
		t.Fatalf("%d pinned connections open after Open, want 1", n)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if n := d.pin.db.Stats().OpenConnections; n != 0 {
		t.Errorf("%d pinned connections open after Close", n)
	}
}
