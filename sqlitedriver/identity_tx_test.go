package sqlitedriver

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/testdb"
)

// TestReplacedFileRefusesCallerTxWrites: a write in the caller's
// transaction, begun on d.DB() after the file Open opened was removed or
// replaced, fails with ErrFileReplaced as the driver's own transactions
// do, instead of committing into the old file with the caller's.
func TestReplacedFileRefusesCallerTxWrites(t *testing.T) {
	for name, replace := range map[string]func(t *testing.T, path string){
		"removed": func(t *testing.T, path string) {
			for _, p := range []string{path, path + "-wal", path + "-shm"} {
				if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
					t.Fatal(err)
				}
			}
		},
		"replaced": func(t *testing.T, path string) {
			other := filepath.Join(t.TempDir(), "restored.db")
			openPath(t, other) // a migrated database, as a restored backup
			if err := os.Rename(other, path); err != nil {
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			path := testdb.SQLitePath(t)
			d := openPath(t, path)
			insert(t, d, job(`{}`))
			held := claim(t, d, "w", 1, time.Minute, false)
			if len(held) != 1 {
				t.Fatalf("claimed %d jobs, want 1", len(held))
			}
			replace(t, path)
			ctx := testCtx(t)
			tx, err := d.DB().BeginTx(ctx, nil)
			if err != nil {
				t.Fatalf("begin: %v", err)
			}
			defer func() { _ = tx.Rollback() }()
			if _, err := d.Insert(ctx, tx, []*driver.InsertParams{job(`{}`)}); !errors.Is(err, ErrFileReplaced) {
				t.Errorf("Insert in a caller's transaction after the file was %s: %v; want ErrFileReplaced", name, err)
			}
			if _, err := d.Finish(ctx, tx, []*driver.FinishParams{completion(held[0])}); !errors.Is(err, ErrFileReplaced) {
				t.Errorf("Finish in a caller's transaction after the file was %s: %v; want ErrFileReplaced", name, err)
			}
		})
	}
}
