package sqlitedriver

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/testdb"
)

// TestReplacedFileRefusesWrites: once the file Open opened is removed, or
// another file is put at its path, every write fails with ErrFileReplaced
// (no refusal: the completer keeps its outcomes), instead of landing in a
// file no other process sees.
func TestReplacedFileRefusesWrites(t *testing.T) {
	for name, replace := range map[string]func(t *testing.T, path string){
		"removed": func(t *testing.T, path string) {
			for _, p := range []string{path, path + "-wal", path + "-shm"} {
				if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
					t.Fatal(err)
				}
			}
		},
		"its write-ahead log removed": func(t *testing.T, path string) {
			if err := os.Remove(path + "-wal"); err != nil {
				t.Fatal(err)
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
			if err := d.CheckFile(); err != nil {
				t.Fatalf("CheckFile before the file was %s: %v", name, err)
			}
			replace(t, path)
			_, err := d.Insert(testCtx(t), nil, []*driver.InsertParams{job(`{}`)})
			if !errors.Is(err, ErrFileReplaced) {
				t.Fatalf("Insert after the file was %s: %v; want ErrFileReplaced", name, err)
			}
			// An idle worker only reads: its probe must see it too.
			_, rerr := d.ClaimableQueues(testCtx(t), &driver.ClaimableParams{
				Queues: map[string]bool{"q": true}, Kinds: []string{"k"}})
			if !errors.Is(rerr, ErrFileReplaced) {
				t.Fatalf("ClaimableQueues after the file was %s: %v; want ErrFileReplaced", name, rerr)
			}
			// Reads outside a transaction: a job, the clock, the schema.
			if _, gerr := d.GetJob(testCtx(t), 1); !errors.Is(gerr, ErrFileReplaced) {
				t.Fatalf("GetJob after the file was %s: %v; want ErrFileReplaced", name, gerr)
			}
			if _, nerr := d.Now(testCtx(t)); !errors.Is(nerr, ErrFileReplaced) {
				t.Fatalf("Now after the file was %s: %v; want ErrFileReplaced", name, nerr)
			}
			if _, serr := d.SchemaVersion(testCtx(t)); !errors.Is(serr, ErrFileReplaced) {
				t.Fatalf("SchemaVersion after the file was %s: %v; want ErrFileReplaced", name, serr)
			}
			if cerr := d.CheckFile(); !errors.Is(cerr, ErrFileReplaced) {
				t.Fatalf("CheckFile after the file was %s: %v; want ErrFileReplaced", name, cerr)
			}
			if d.Refused(err) {
				t.Fatalf("Refused(%v) = true: the completer would give outcomes up", err)
			}
		})
	}
}

// TestWALCheckpointsAreNotAReplacement: checkpoints, truncating ones
// included, keep the -wal file SQLite writes, so writes go on.
func TestWALCheckpointsAreNotAReplacement(t *testing.T) {
	path := testdb.SQLitePath(t)
	d := openPath(t, path)
	for _, mode := range []string{"PASSIVE", "FULL", "RESTART", "TRUNCATE"} {
		insert(t, d, job(`{}`))
		if _, err := d.DB().ExecContext(testCtx(t), "PRAGMA wal_checkpoint("+mode+")"); err != nil {
			t.Fatalf("wal_checkpoint(%s): %v", mode, err)
		}
		insert(t, d, job(`{}`))
		if err := d.CheckFile(); err != nil {
			t.Fatalf("CheckFile after wal_checkpoint(%s): %v", mode, err)
		}
	}
}

// TestFileNotReplacedAfterChdir: the identity is that of the absolute
// path, so a process that changes its directory after Open keeps writing.
func TestFileNotReplacedAfterChdir(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	d := openPath(t, "rel.db")
	t.Chdir(t.TempDir())
	insert(t, d, job(`{}`))
}
