package sqlitedriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// ErrFileReplaced reports that the database file Open opened is no longer
// at its path: it was removed, renamed or replaced (a backup restored over
// it) while the driver ran. The driver's connections still hold the old
// file, so its writes would land where no other process, and no later
// run, looks: completions lost, jobs run again; and its reads would show
// the old file's jobs, so an idle worker would never see the new file's.
// Its write-ahead log (the -wal file) removed or replaced under it is
// reported the same way: the writes not yet checkpointed would be lost.
// Every write transaction and every read outside one checks it first and
// fails with this error; the process must be restarted on the file now at
// the path (see the package documentation).
var ErrFileReplaced = errors.New("sqlitedriver: the database file was replaced")

// fileIdentity is the file a Driver from Open opened, to tell whether its
// path still names it, and its write-ahead log (the -wal file beside it).
type fileIdentity struct {
	path string
	info os.FileInfo // nil when the file could not be read at Open
	wal  *walIdentity
}

// walIdentity is the -wal file the driver's connections write, recorded
// the first time it is seen. SQLite removes it only when the last
// connection to the database closes, and a Driver from Open keeps one
// connection open as long as it is open (walPin), so while the driver is
// open a -wal file removed or replaced is someone else's doing: the
// connections keep writing to the removed file, which no other process,
// and no later run, reads, so whatever was not checkpointed into the
// database file yet is lost at the next crash.
type walIdentity struct {
	mu   sync.Mutex
	info os.FileInfo
}

// openIdentity records the file now at path (made absolute, so that a
// change of the working directory changes nothing).
func openIdentity(path string) fileIdentity {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	info, err := os.Stat(path)
	if err != nil {
		return fileIdentity{path: path}
	}
	return fileIdentity{path: path, info: info, wal: &walIdentity{}}
}

// check returns ErrFileReplaced when the path no longer names the file
// recorded, nil when it does or when nothing was recorded (a Driver from
// New, or an in-memory database).
func (f fileIdentity) check() error {
	if f.info == nil {
		return nil
	}
	now, err := os.Stat(f.path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%w: %s was removed while the process had it open; restart the process", ErrFileReplaced, f.path)
	case err != nil:
		return nil // cannot tell; the statement says what is wrong
	case !os.SameFile(f.info, now):
		return fmt.Errorf("%w: %s is another file than the one this process opened; restart the process", ErrFileReplaced, f.path)
	}
	return f.wal.check(f.path + "-wal")
}

// check returns ErrFileReplaced when the -wal file at path is gone or is
// another one than the one recorded; the first time it exists, it records
// it.
func (w *walIdentity) check(path string) error {
	if w == nil {
		return nil
	}
	now, err := os.Stat(path)
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.info == nil:
		if err == nil {
			w.info = now
		}
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("%w: %s, the write-ahead log, was removed while the process wrote to it: "+
			"writes not yet checkpointed are in no file another process reads; restart the process", ErrFileReplaced, path)
	case err == nil && !os.SameFile(w.info, now):
		return fmt.Errorf("%w: %s, the write-ahead log, is another file than the one this process writes; restart the process",
			ErrFileReplaced, path)
	}
	return nil
}

// CheckFile returns an error wrapping ErrFileReplaced when the path d was
// opened on no longer names the file it opened, or its write-ahead log
// (the -wal file) was removed or replaced, and nil when neither happened
// or when d did not open a file itself (a Driver from New or
// NewWithReader). It costs two stats; a process may call it on a timer to stop
// once its file is gone, as `leasehold work` stops at the first call that
// fails with ErrFileReplaced.
func (d *Driver) CheckFile() error { return d.file.check() }

// walPin is the connection a Driver from Open keeps open on its file, and
// the pool it comes from, so that SQLite never removes the -wal file under
// the driver: it removes it when the last connection to the database
// closes (after checkpointing everything), and database/sql closes the
// writer connection, and the readers, of its own accord: after a
// statement that its context interrupted, modernc.org/sqlite reports the
// connection unusable. A process with only the writer open (an idle one,
// or one that only reads outside claims) would then see its -wal file
// removed and recreated as another, and fail every call with
// ErrFileReplaced. The pinned connection runs no statement after Open,
// so nothing interrupts it.
type walPin struct {
	db   *sql.DB
	conn *sql.Conn
}

// pinSQL reads the schema: a connection in WAL mode keeps its shared lock
// on the database file, which is what keeps the -wal file, from its first
// read until it closes.
const pinSQL = `SELECT count(*) FROM sqlite_schema`

// openPin opens the pinned connection on path, read-only (ReaderDSN).
func openPin(ctx context.Context, path string) (*walPin, error) {
	db, err := sql.Open("sqlite", ReaderDSN(path))
	if err != nil {
		return nil, fmt.Errorf("sqlitedriver: open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err == nil {
		var n int64
		err = conn.QueryRowContext(ctx, pinSQL).Scan(&n)
	}
	if err != nil {
		if conn != nil {
			_ = conn.Close()
		}
		_ = closeOwned(db)
		return nil, explainErr(path, fmt.Errorf("sqlitedriver: open %s: keep a connection open: %w", path, err))
	}
	return &walPin{db: db, conn: conn}, nil
}

// close closes the pinned connection and its pool, and returns once the
// connection is closed (closeOwned). A second close, from a second
// Driver.Close, finds both closed and is not an error.
func (p *walPin) close() error {
	if p == nil {
		return nil
	}
	err := p.conn.Close()
	if errors.Is(err, sql.ErrConnDone) {
		err = nil
	}
	return errors.Join(err, closeOwned(p.db))
}
