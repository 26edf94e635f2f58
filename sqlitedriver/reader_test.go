package sqlitedriver_test

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/leasehold/leasehold/sqlitedriver"
)

// TestNewWithReaderRefusesAnotherFile checks that a reader open on another
// file, or in memory, is refused: it would find none of the leased jobs.
func TestNewWithReaderRefusesAnotherFile(t *testing.T) {
	dir := t.TempDir()
	db := openDB(t, sqlitedriver.DSN(filepath.Join(dir, "a.db")), 1)
	for name, dsn := range map[string]string{
		"another file": sqlitedriver.ReaderDSN(filepath.Join(dir, "b.db")),
		"in memory":    "file::memory:",
	} {
		reader := openDB(t, dsn, 1)
		if _, err := sqlitedriver.NewWithReader(t.Context(), db, reader); !errors.Is(err, sqlitedriver.ErrReaderNotSameFile) {
			t.Errorf("%s: NewWithReader: %v, want ErrReaderNotSameFile", name, err)
		}
	}
	if _, err := sqlitedriver.NewWithReader(t.Context(), db, nil); err == nil {
		t.Error("NewWithReader with a nil reader: no error")
	}
}

// TestNewWithReaderCloseLeavesBothOpen checks that Close leaves the
// caller's writer and reader open.
func TestNewWithReaderCloseLeavesBothOpen(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.db")
	db := openDB(t, sqlitedriver.DSN(path), 1)
	reader := openDB(t, sqlitedriver.ReaderDSN(path), sqlitedriver.ReaderConns)
	d, err := sqlitedriver.NewWithReader(t.Context(), db, reader)
	if err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for name, x := range map[string]interface{ Ping() error }{"writer": db, "reader": reader} {
		if err := x.Ping(); err != nil {
			t.Errorf("%s after Close: %v", name, err)
		}
	}
}
