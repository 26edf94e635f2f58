package sqlitedriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/testdb"
)

// bigJob returns insert params with about 8 KiB of arguments, so a few
// inserts fill a page-limited database.
func bigJob(i int) *driver.InsertParams {
	return job(fmt.Sprintf(`{"n":%d,"pad":"%s"}`, i, strings.Repeat("x", 8<<10)))
}

// fillUntilFull inserts big jobs (in tx when non-nil) until an insert
// fails, and returns the ids inserted before and the error.
func fillUntilFull(t *testing.T, d *Driver, tx *sql.Tx) ([]int64, error) {
	t.Helper()
	var ids []int64
	for i := range 10000 {
		var txArg any
		if tx != nil {
			txArg = tx
		}
		res, err := d.Insert(testCtx(t), txArg, []*driver.InsertParams{bigJob(i)})
		if err != nil {
			return ids, err
		}
		ids = append(ids, res[0].Job.ID)
	}
	t.Fatal("the database never filled up")
	return nil, nil
}

// limitPages caps the database at its current size plus extra pages on
// the driver's single connection.
func limitPages(t *testing.T, d *Driver, extra int) {
	t.Helper()
	var pages int
	if err := d.DB().QueryRowContext(testCtx(t), `PRAGMA page_count`).Scan(&pages); err != nil {
		t.Fatal(err)
	}
	if _, err := d.DB().ExecContext(testCtx(t), fmt.Sprintf(`PRAGMA max_page_count = %d`, pages+extra)); err != nil {
		t.Fatal(err)
	}
}

// checkDiskFull asserts that err says the disk is full, names path and
// matches ErrDiskFull.
func checkDiskFull(t *testing.T, err error, path string) {
	t.Helper()
	if !errors.Is(err, ErrDiskFull) {
		t.Fatalf("error when full = %v; want errors.Is(err, ErrDiskFull)", err)
	}
	msg := err.Error()
	if !strings.Contains(msg, "the disk is full") || !strings.Contains(msg, path) {
		t.Fatalf("error when full = %q; want it to say the disk is full and name %s", msg, path)
	}
	var se *sqlite.Error
	if !errors.As(err, &se) {
		t.Fatalf("error when full = %v; the original *sqlite.Error is not kept", err)
	}
}

// checkIntact asserts that the jobs in ids are still there, unchanged.
func checkIntact(t *testing.T, d *Driver, ids []int64) {
	t.Helper()
	for i, id := range ids {
		j := mustGet(t, d, id)
		if j.State != leasehold.StatePending || !strings.HasPrefix(string(j.Args), fmt.Sprintf(`{"n":%d,`, i)) {
			t.Fatalf("job %d after the disk filled: state %s args %.20s", id, j.State, j.Args)
		}
	}
}

func TestDiskFullSaysSo(t *testing.T) {
	path := testdb.SQLitePath(t)
	d := openPath(t, path)
	limitPages(t, d, 40)
	ids, err := fillUntilFull(t, d, nil)
	if len(ids) == 0 {
		t.Fatalf("the first insert already failed: %v", err)
	}
	checkDiskFull(t, err, path)
	t.Logf("after %d inserts: %v", len(ids), err)
	checkIntact(t, d, ids)

	// Inside the caller's transaction the error is explained the same way.
	tx, err := d.DB().BeginTx(testCtx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = fillUntilFull(t, d, tx)
	_ = tx.Rollback()
	checkDiskFull(t, err, path)
	checkIntact(t, d, ids)

	// Once there is room again, writes succeed.
	limitPages(t, d, 1000)
	insert(t, d, bigJob(len(ids)))
}

// TestDiskFullOnTmpfs fills a real, tiny file system. It needs the right to
// mount (root on Linux) and is skipped otherwise.
func TestDiskFullOnTmpfs(t *testing.T) {
	if testing.Short() {
		t.Skip("-short")
	}
	dir := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=512k", "tmpfs", dir).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a tmpfs to fill (needs root on Linux): %v: %s", err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("umount", dir).CombinedOutput(); err != nil {
			t.Errorf("umount %s: %v: %s", dir, err, out)
		}
	})
	path := filepath.Join(dir, "full.db")
	d := openPath(t, path)
	ids, err := fillUntilFull(t, d, nil)
	checkDiskFull(t, err, path)
	t.Logf("after %d inserts: %v", len(ids), err)
	checkIntact(t, d, ids)
	if fi, err := os.Stat(path); err == nil {
		t.Logf("database file %d bytes", fi.Size())
	}
}

func TestExplainCode(t *testing.T) {
	for _, c := range []struct {
		code int
		kind error
		want string
	}{
		{sqlite3.SQLITE_FULL, ErrDiskFull, "the disk is full (or the database file hit its size limit) writing /x.db"},
		{sqlite3.SQLITE_IOERR_SHMSIZE, ErrDiskFull, "could not grow the shared-memory file /x.db-shm (SQLITE_IOERR_SHMSIZE)"},
		{sqlite3.SQLITE_IOERR_WRITE, ErrDiskIO, "failed a read or write of /x.db, its -wal or its -shm file (SQLITE_IOERR_WRITE)"},
		{sqlite3.SQLITE_IOERR_FSYNC, ErrDiskIO, "(SQLITE_IOERR_FSYNC)"},
		{sqlite3.SQLITE_READONLY, nil, "/x.db is read-only"},
		{sqlite3.SQLITE_CANTOPEN, nil, "cannot open /x.db"},
		{sqlite3.SQLITE_CORRUPT, ErrCorrupt, "/x.db is corrupt"},
		{sqlite3.SQLITE_NOTADB, ErrCorrupt, "/x.db is not an SQLite database"},
		{sqlite3.SQLITE_CONSTRAINT_UNIQUE, nil, ""},
		{sqlite3.SQLITE_BUSY, nil, ""},
	} {
		what, kind := explainCode(c.code, "/x.db")
		if kind != c.kind || !strings.Contains(what, c.want) || (c.want == "") != (what == "") {
			t.Errorf("explainCode(%d) = %v, %q; want %v, containing %q", c.code, kind, what, c.kind, c.want)
		}
	}
}

func TestStarvedWriteConnectionSaysSo(t *testing.T) {
	d := openTest(t)
	insertN(t, d, 1)
	lease := claim(t, d, "w", 1, time.Minute, false)[0]
	hb := &driver.HeartbeatParams{Owner: "w", TTL: time.Minute,
		Leases: []driver.LeaseRef{{ID: lease.ID, Attempt: lease.Attempt}}}

	// An application transaction on DB() holds the single connection.
	tx, err := d.DB().BeginTx(testCtx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(testCtx(t), 300*time.Millisecond)
	_, err = d.Heartbeat(ctx, hb)
	cancel()
	_ = tx.Rollback()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("heartbeat while the connection is held = %v; want context.DeadlineExceeded", err)
	}
	if !regexp.MustCompile(`waited \d+ms for the write connection`).MatchString(err.Error()) {
		t.Fatalf("heartbeat while the connection is held = %q; want it to say how long it waited", err)
	}
	for _, want := range []string{"for the write connection", "application transaction from DB()",
		"waiting for the file's write lock, which another connection or process holds", "heartbeats cannot renew leases"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("heartbeat while the connection is held = %q; want it to contain %q", err, want)
		}
	}
	t.Log(err)
	if held, err := d.Heartbeat(testCtx(t), hb); err != nil || len(held) != 1 {
		t.Fatalf("heartbeat once the connection is free = %v, %v", held, err)
	}
}

func TestStarvedWriteLockSaysSo(t *testing.T) {
	path := testdb.SQLitePath(t)
	d := openPath(t, path)
	insertN(t, d, 1)
	lease := claim(t, d, "w", 1, time.Minute, false)[0]
	other := openPath(t, path)

	// Another connection (as another process would) holds the write lock.
	tx, err := other.DB().BeginTx(testCtx(t), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	ctx, cancel := context.WithTimeout(testCtx(t), 300*time.Millisecond)
	defer cancel()
	_, err = d.Heartbeat(ctx, &driver.HeartbeatParams{Owner: "w", TTL: time.Minute,
		Leases: []driver.LeaseRef{{ID: lease.ID, Attempt: lease.Attempt}}})
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("heartbeat while another connection writes = %v; want context.DeadlineExceeded", err)
	}
	for _, want := range []string{"for the database's write lock", "another connection or process", "heartbeats cannot renew leases"} {
		if !strings.Contains(err.Error(), want) {
			t.Fatalf("heartbeat while another connection writes = %q; want it to contain %q", err, want)
		}
	}
	t.Log(err)
}
