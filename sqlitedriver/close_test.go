package sqlitedriver

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestCloseWaitsForTheLastConnection: Close of a Driver from Open returns
// only once no connection of its pool is open, so that SQLite has removed
// the file's -wal and -shm. A connection still held when Close is called
// stands for the one database/sql may still be opening then (a request
// made before the close): with a bare sql.DB Close, Close returned at
// once and the file's directory was not empty when a test removed it.
func TestCloseWaitsForTheLastConnection(t *testing.T) {
	dir := t.TempDir()
	d, err := Open(filepath.Join(dir, "leasehold.db"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Migrate(t.Context()); err != nil {
		t.Fatal(err)
	}
	conn, err := d.DB().Conn(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	closed := make(chan error, 1)
	go func() { closed <- d.Close() }()
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while a connection was open", err)
	case <-time.After(200 * time.Millisecond):
	}
	if err := conn.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close: %v", err)
		}
	case <-time.After(closeWait + time.Second):
		t.Fatal("Close did not return once the connection was released")
	}
	if n := d.DB().Stats().OpenConnections; n != 0 {
		t.Errorf("%d connections open after Close", n)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != "leasehold.db" {
			t.Errorf("%s left beside the database after Close", e.Name())
		}
	}
}
