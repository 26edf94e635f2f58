package sqlitedriver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// ErrDiskFull reports that SQLite could not write because the file system
// has no room left (or a quota is reached), or because the database file
// reached its size limit (max_page_count). Nothing of the failed
// transaction was written; what was committed before is intact. Free space,
// then retry.
var ErrDiskFull = errors.New("sqlitedriver: the disk is full")

// ErrDiskIO reports that the operating system failed a read or write of the
// database, its write-ahead log or its shared-memory file for a reason other
// than a lack of space: a failing disk, a file system gone away, or a file
// system without the locking and shared memory SQLite needs (such as a
// network file system).
var ErrDiskIO = errors.New("sqlitedriver: disk I/O error")

// ErrCorrupt reports that SQLite found the database file damaged
// (SQLITE_CORRUPT) or not an SQLite database at all (SQLITE_NOTADB). No
// retry mends it: stop the processes on the file and restore it from a
// backup (`leasehold work` stops on it).
var ErrCorrupt = errors.New("sqlitedriver: the database file is corrupt")

// ErrNotWAL reports that Open was given no database file (an empty path,
// which SQLite takes for a private temporary database, or ":memory:"), or
// a file that SQLite did not put in WAL mode (a file system without the
// shared memory WAL needs, say). Open's writer, reader and pinned
// connections must share one file in WAL mode: on a database of each
// connection's own, the jobs the writer inserts are not where the readers
// look, and every claim fails.
var ErrNotWAL = errors.New("sqlitedriver: the database is not a file in WAL mode")

// fileError explains an SQLite error about the database file: what it means
// and which file, with the original error kept for errors.As.
type fileError struct {
	kind error  // ErrDiskFull, ErrDiskIO, ErrCorrupt, or nil
	what string // the explanation, naming the file
	path string // the file, "" when unknown
	err  error  // the original error chain
}

// Error is the explanation followed by the original message (without a
// second "sqlitedriver:" prefix).
func (e *fileError) Error() string {
	orig := strings.TrimPrefix(e.err.Error(), "sqlitedriver: ")
	if e.path != "" { // the explanation names the file already
		orig = strings.TrimPrefix(orig, "open "+e.path+": ")
	}
	return "sqlitedriver: " + e.what + ": " + orig
}

// Unwrap lets errors.Is match both the sentinel and the original error.
func (e *fileError) Unwrap() []error {
	if e.kind == nil {
		return []error{e.err}
	}
	return []error{e.kind, e.err}
}

// wrapErr explains err when it carries an SQLite error about the database
// file (full, I/O, read-only, corrupt, not a database, cannot open); other
// errors, nil and errors already explained are returned as they are.
func (d *Driver) wrapErr(err error) error { return explainErr(d.path, err) }

// explainErr is wrapErr for the database file at path ("" when unknown).
func explainErr(path string, err error) error {
	var se *sqlite.Error
	var fe *fileError
	if err == nil || !errors.As(err, &se) || errors.As(err, &fe) {
		return err
	}
	what, kind := explainCode(se.Code(), fileName(path))
	if what == "" {
		return err
	}
	return &fileError{kind: kind, what: what, path: path, err: err}
}

// explainCode says what the (extended) result code means for file, and
// which sentinel it matches; "" when it is not about the file.
func explainCode(code int, file string) (what string, kind error) {
	switch {
	case code == sqlite3.SQLITE_IOERR_SHMSIZE:
		return fmt.Sprintf("the disk is full (or a quota is reached): could not grow the shared-memory file %s-shm (%s)", file, codeName(code)), ErrDiskFull
	case code&0xff == sqlite3.SQLITE_FULL:
		return "the disk is full (or the database file hit its size limit) writing " + file, ErrDiskFull
	case code&0xff == sqlite3.SQLITE_IOERR:
		return fmt.Sprintf("the operating system failed a read or write of %s, its -wal or its -shm file (%s): check the disk, and that the file is on a local file system", file, codeName(code)), ErrDiskIO
	case code&0xff == sqlite3.SQLITE_READONLY:
		return fmt.Sprintf("%s is read-only (%s): the file, and its directory (for the -wal and -shm files), must be writable", file, codeName(code)), nil
	case code&0xff == sqlite3.SQLITE_CANTOPEN:
		return fmt.Sprintf("cannot open %s (%s): check that it is a file, not a directory, and that its directory exists and is writable", file, codeName(code)), nil
	case code&0xff == sqlite3.SQLITE_CORRUPT:
		return fmt.Sprintf("%s is corrupt (%s): restore it from a backup", file, codeName(code)), ErrCorrupt
	case code&0xff == sqlite3.SQLITE_NOTADB:
		return file + " is not an SQLite database", ErrCorrupt
	}
	return "", nil
}

// fileName names the database file in messages.
func fileName(path string) string {
	if path == "" {
		return "the database file"
	}
	return path
}

// ioErrNames names the extended I/O error codes that modernc.org/sqlite's
// ErrorCodeString leaves out or leaves unnamed.
var ioErrNames = map[int]string{
	sqlite3.SQLITE_IOERR_READ:       "SQLITE_IOERR_READ",
	sqlite3.SQLITE_IOERR_SHORT_READ: "SQLITE_IOERR_SHORT_READ",
	sqlite3.SQLITE_IOERR_WRITE:      "SQLITE_IOERR_WRITE",
	sqlite3.SQLITE_IOERR_FSYNC:      "SQLITE_IOERR_FSYNC",
	sqlite3.SQLITE_IOERR_DIR_FSYNC:  "SQLITE_IOERR_DIR_FSYNC",
	sqlite3.SQLITE_IOERR_TRUNCATE:   "SQLITE_IOERR_TRUNCATE",
	sqlite3.SQLITE_IOERR_FSTAT:      "SQLITE_IOERR_FSTAT",
	sqlite3.SQLITE_IOERR_LOCK:       "SQLITE_IOERR_LOCK",
	sqlite3.SQLITE_IOERR_SHMOPEN:    "SQLITE_IOERR_SHMOPEN",
	sqlite3.SQLITE_IOERR_SHMSIZE:    "SQLITE_IOERR_SHMSIZE",
	sqlite3.SQLITE_IOERR_SHMLOCK:    "SQLITE_IOERR_SHMLOCK",
	sqlite3.SQLITE_IOERR_SHMMAP:     "SQLITE_IOERR_SHMMAP",
	sqlite3.SQLITE_IOERR_MMAP:       "SQLITE_IOERR_MMAP",
}

// codeName returns the symbolic name of an SQLite result code, such as
// SQLITE_IOERR_SHMSIZE, or its number.
func codeName(code int) string {
	if n, ok := ioErrNames[code]; ok {
		return n
	}
	s := sqlite.ErrorCodeString[code]
	if i := strings.LastIndex(s, "(SQLITE_"); i >= 0 && strings.HasSuffix(s, ")") {
		return s[i+1 : len(s)-1]
	}
	return fmt.Sprintf("SQLite code %d", code)
}

// beginErr explains a failure to begin the driver's own write transaction
// (or a wait for SQLITE_BUSY to clear that outlived ctx) after waiting since
// start. When ctx ended first, the wait itself is the news: the single
// write connection (or the file's write lock) is held by someone else, and
// every driver write, heartbeats included, waits behind it.
func (d *Driver) beginErr(ctx context.Context, start time.Time, err error) error {
	if ctx.Err() == nil {
		return d.wrapErr(fmt.Errorf("sqlitedriver: begin: %w", err))
	}
	waited := time.Since(start).Round(time.Millisecond)
	const after = "so leasehold cannot write meanwhile (heartbeats cannot renew leases)"
	if s := d.db.Stats(); s.MaxOpenConnections > 0 && s.InUse >= s.MaxOpenConnections {
		// The connection may be the client's own, held by a heartbeat or
		// claim that itself waits for the file's write lock: say both.
		return fmt.Errorf("sqlitedriver: waited %v for the write connection: a transaction holds it "+
			"(an application transaction from DB(), or a write of leasehold's own waiting for the file's write lock, "+
			"which another connection or process holds), %s: %w",
			waited, after, err)
	}
	if errors.Is(err, ctx.Err()) {
		return fmt.Errorf("sqlitedriver: waited %v for the database's write lock: another connection or process holds a write transaction, %s: %w",
			waited, after, err)
	}
	return fmt.Errorf("sqlitedriver: waited %v for the database's write lock: another connection or process holds a write transaction, %s: %w (%w)",
		waited, after, ctx.Err(), err)
}
