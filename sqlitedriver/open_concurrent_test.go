package sqlitedriver

import (
	"database/sql"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
)

// TestOpenConcurrently: several workers opening one file at once (as
// processes starting together do) all succeed, whether the file does not
// exist yet or is an application's database in rollback-journal mode.
// Each switches the file to WAL as it opens, and SQLite does not wait for
// that lock: without a retry, all but one failed with SQLITE_BUSY.
func TestOpenConcurrently(t *testing.T) {
	t.Run("new file", func(t *testing.T) { openConcurrently(t, func(string) {}) })
	t.Run("rollback journal", func(t *testing.T) {
		openConcurrently(t, func(path string) {
			db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(DELETE)")
			if err != nil {
				t.Fatal(err)
			}
			defer func() { _ = db.Close() }()
			if _, err := db.Exec(`CREATE TABLE app (x INTEGER)`); err != nil {
				t.Fatal(err)
			}
		})
	})
}

// openConcurrently opens fresh files prepared by prepare from six
// goroutines at once, round after round, and fails at the first error.
func openConcurrently(t *testing.T, prepare func(path string)) {
	const rounds, openers = 100, 6
	dir := t.TempDir()
	for r := range rounds {
		path := filepath.Join(dir, fmt.Sprintf("db%d", r))
		prepare(path)
		errs := make(chan error, openers)
		var wg sync.WaitGroup
		for range openers {
			wg.Go(func() {
				d, err := Open(path)
				if err != nil {
					errs <- err
					return
				}
				errs <- d.Close()
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("round %d of %d openers at once: %v", r, openers, err)
			}
		}
	}
}
