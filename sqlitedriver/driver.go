package sqlitedriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"modernc.org/sqlite"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

var (
	_ driver.Driver      = (*Driver)(nil)
	_ driver.EndedReader = (*Driver)(nil)
)

// BusyTimeout is the busy_timeout Open sets: how long a statement waits for
// another connection's (or process's) write lock before SQLITE_BUSY.
const BusyTimeout = 10 * time.Second

// MmapSize is the mmap_size Open sets: up to this many bytes of the
// database file are read through a memory map instead of a read system
// call per page that is not in SQLite's own page cache (2 MiB). In a
// drain those reads were the writer connection's system calls, each one
// a point where its goroutine could lose its processor while it held the
// database's only write lock. Writes still go through the write-ahead log.
const MmapSize = 256 << 20

// busyRetries is how many times a driver-owned transaction that still failed
// with SQLITE_BUSY after BusyTimeout is run again.
const busyRetries = 4

// nowExpr is SQLite's clock as INTEGER Unix microseconds (millisecond
// resolution, the resolution of SQLite's 'now').
const nowExpr = `CAST(ROUND(unixepoch('subsec') * 1000) AS INTEGER) * 1000`

// Driver is the SQLite implementation of driver.Driver and
// driver.EndedReader. It is safe for concurrent use. See the package
// documentation for the single-writer model and the transaction type
// Insert and Finish accept.
type Driver struct {
	db    *sql.DB
	owned bool
	path  string // the file Open opened, for error messages; "" from New
	// file is the file Open opened, checked before each write transaction
	// (identity.go).
	file  fileIdentity
	stmts stmtCache
	// reader holds Open's read-only connections (nil from New), and
	// readStmts the statements prepared on them.
	reader    *sql.DB
	readStmts stmtCache
	// pin keeps a connection of Open's on the file while the Driver is
	// open, so that its -wal file stays the one file checks (walPin); nil
	// from New.
	pin *walPin
}

// Open opens (creating if needed) the SQLite database file at path with the
// pragmas leasehold needs (WAL, synchronous=FULL, busy_timeout, foreign_keys,
// mmap_size, BEGIN IMMEDIATE transactions): one connection that writes,
// ReaderConns read-only ones for what claims read (see the package
// documentation), and one more read-only one that stays open, idle, so
// that SQLite keeps the file's -wal file while the Driver is open
// (walPin). Close closes them. Call Migrate before use.
//
// Those connections must share the file, in WAL mode: an empty path or
// ":memory:" (no file, and a database of each connection's own) is
// refused before anything is opened, and a file whose journal_mode is
// not wal once opened (on a file system without shared memory, say) is
// refused and closed; both errors match ErrNotWAL.
func Open(path string) (*Driver, error) {
	if err := checkPath(path); err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite", DSN(path))
	if err != nil {
		return nil, fmt.Errorf("sqlitedriver: open %s: %w", path, err)
	}
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	ctx, cancel := context.WithTimeout(context.Background(), 2*BusyTimeout)
	defer cancel()
	if err := pingFree(ctx, db); err != nil {
		_ = db.Close()
		return nil, explainErr(path, fmt.Errorf("sqlitedriver: open %s: %w", path, err))
	}
	if err := checkWAL(ctx, db, path); err != nil {
		_ = closeOwned(db)
		return nil, err
	}
	reader, err := openReader(path)
	if err != nil {
		_ = db.Close()
		return nil, err
	}
	pin, err := openPin(ctx, path)
	if err != nil {
		_ = reader.Close()
		_ = closeOwned(db)
		return nil, err
	}
	return &Driver{db: db, owned: true, path: path, file: openIdentity(path), reader: reader, pin: pin}, nil
}

// pingFree opens db's connection, trying again while SQLite answers
// SQLITE_BUSY, until ctx ends. A connection that finds the file in
// another journal mode (a new file, or an application's in rollback
// mode) switches it to WAL as it opens, which takes the write lock from
// a read lock: SQLite does not wait for that upgrade (busy_timeout does
// not apply: waiting could deadlock), so of several processes opening
// such a file at once all but one fail at once. The failed connection is
// discarded, and the next finds the file in WAL mode.
func pingFree(ctx context.Context, db *sql.DB) error {
	backoff := 5 * time.Millisecond
	for {
		err := db.PingContext(ctx)
		if err == nil || !isBusy(err) {
			return err
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		backoff = min(2*backoff, 200*time.Millisecond)
	}
}

// checkPath refuses the paths that name no file: SQLite gives each
// connection on them a database of its own, so Open's readers would never
// see what its writer wrote.
func checkPath(path string) error {
	switch path {
	case "":
		return fmt.Errorf("%w: an empty path opens a private temporary database on each connection; "+
			"the driver needs a database file its connections share", ErrNotWAL)
	case ":memory:":
		return fmt.Errorf("%w: %q opens a private in-memory database on each connection; "+
			"the driver needs a database file its connections share", ErrNotWAL, path)
	}
	return nil
}

// checkWAL returns an error matching ErrNotWAL unless db's main database
// is a file in WAL mode. DSN asks for WAL, but SQLite keeps the old
// journal mode, without an error, where WAL cannot be used; the readers
// then would wait on the writer (or, with no file, see another database).
func checkWAL(ctx context.Context, db *sql.DB, path string) error {
	file, err := mainFile(ctx, db)
	if err != nil {
		return explainErr(path, fmt.Errorf("sqlitedriver: open %s: %w", path, err))
	}
	if file == "" {
		return fmt.Errorf("%w: %q opened a private in-memory or temporary database, not a file the driver's connections share",
			ErrNotWAL, path)
	}
	var mode string
	if err := db.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		return explainErr(path, fmt.Errorf("sqlitedriver: open %s: read journal_mode: %w", path, err))
	}
	if !strings.EqualFold(mode, "wal") {
		return fmt.Errorf("%w: %s stayed in journal_mode %s: the driver needs WAL, on a local file system with shared memory (not NFS)",
			ErrNotWAL, path, mode)
	}
	return nil
}

// DSN returns the modernc.org/sqlite data source name Open uses for path,
// for callers who open the *sql.DB themselves and pass it to New.
func DSN(path string) string {
	q := []string{
		"_pragma=busy_timeout(" + fmt.Sprint(BusyTimeout.Milliseconds()) + ")",
		"_pragma=journal_mode(WAL)",
		"_pragma=synchronous(FULL)",
		"_pragma=foreign_keys(1)",
		"_pragma=mmap_size(" + fmt.Sprint(MmapSize) + ")",
		"_txlock=immediate",
	}
	return "file:" + escapePath(path) + "?" + strings.Join(q, "&")
}

// escapePath escapes the characters an SQLite URI filename gives a meaning,
// and keeps a path starting with // from being read as an authority.
func escapePath(path string) string {
	if strings.HasPrefix(path, "//") {
		path = "/" + strings.TrimLeft(path, "/")
	}
	r := strings.NewReplacer("%", "%25", "?", "%3f", "#", "%23")
	return r.Replace(path)
}

// New returns a Driver on a caller-owned *sql.DB opened with the
// modernc.org/sqlite driver ("sqlite"). Close does not close db. The caller
// should open it as Open does (see DSN): journal_mode WAL, synchronous FULL,
// a busy_timeout, _txlock=immediate, and db.SetMaxOpenConns(1); mmap_size
// is for speed only.
//
// A Driver from New has no reader connections: each claim reads the jobs
// it leased inside its own write transaction, which holds the one writer
// longer than Open's Driver does (docs/benchmarks.md, "The claim's read
// moved off the write lock"). NewWithReader gives it some.
func New(db *sql.DB) (*Driver, error) {
	if db == nil {
		return nil, errors.New("sqlitedriver: New: nil *sql.DB")
	}
	return &Driver{db: db}, nil
}

// NewWithReader is New with caller-owned read-only connections on the same
// file, as Open has (see ReaderDSN and ReaderConns): a claim commits its
// leases on db and then reads the leased jobs on reader, beside the
// writer. Close closes neither. A reader open on another file (or in
// memory) is refused with an error matching ErrReaderNotSameFile.
func NewWithReader(ctx context.Context, db, reader *sql.DB) (*Driver, error) {
	if db == nil || reader == nil {
		return nil, errors.New("sqlitedriver: NewWithReader: nil *sql.DB")
	}
	if err := sameFile(ctx, db, reader); err != nil {
		return nil, err
	}
	return &Driver{db: db, reader: reader}, nil
}

// DB returns the underlying database, for transactions passed to Insert and
// Finish (a *sql.DB of the application's own opened on the same file with
// DSN will do too; see the package documentation).
func (d *Driver) DB() *sql.DB { return d.db }

// Close closes the driver's prepared statements, and the database if Open
// opened it; a *sql.DB given to New is left open. A Driver from Open
// returns once its connections are closed, including one database/sql
// was still opening (see closeOwned), so the file can be removed or
// copied right after.
func (d *Driver) Close() error {
	// Each step runs whatever the one before returned: a statement that
	// fails to close must not leave the file open.
	var errs []error
	if err := d.closeStmts(); err != nil {
		errs = append(errs, fmt.Errorf("sqlitedriver: close statements: %w", err))
	}
	// The pinned connection first: the writer's close stays the last, as
	// it would be without one.
	if err := d.pin.close(); err != nil {
		errs = append(errs, fmt.Errorf("sqlitedriver: close the pinned connection: %w", err))
	}
	if err := d.closeReader(); err != nil {
		errs = append(errs, fmt.Errorf("sqlitedriver: close the reader connections: %w", err))
	}
	if d.owned {
		if err := closeOwned(d.db); err != nil {
			errs = append(errs, fmt.Errorf("sqlitedriver: close: %w", err))
		}
	}
	return errors.Join(errs...)
}

// Now returns the database clock.
func (d *Driver) Now(ctx context.Context) (time.Time, error) {
	if err := d.file.check(); err != nil {
		return time.Time{}, fmt.Errorf("sqlitedriver: read clock: %w", err)
	}
	var us int64
	if err := d.dbQueryRow(ctx, nowSQL).Scan(&us); err != nil {
		return time.Time{}, fmt.Errorf("sqlitedriver: read clock: %w", d.wrapErr(err))
	}
	return fromMicros(us), nil
}

// querier is what *sql.DB and *sql.Tx have in common.
type querier interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// nowSQL reads the database clock.
const nowSQL = `SELECT ` + nowExpr

// txFunc is the body of a transaction; now is the database clock read at
// its start, in Unix microseconds, with the write lock held (withTx takes
// it first in a caller's transaction). Only leaseHeldSQL, which judges a
// lease by the clock, reads the clock again. It may be run more than once,
// so it must not keep state between runs.
type txFunc func(ctx context.Context, tx *sql.Tx, now int64) error

// CheckTx implements driver.TxChecker: it refuses, with
// leasehold.ErrUnsupportedTx, a tx that is not a *sql.Tx, or a nil one.
func (d *Driver) CheckTx(tx any) error {
	_, err := asTx(tx)
	return err
}

// asTx returns the *sql.Tx in tx, nil for no transaction, or
// ErrUnsupportedTx. A nil *sql.Tx is refused, not taken for no
// transaction: the write would then commit on its own, whatever becomes
// of the caller's transaction.
func asTx(tx any) (*sql.Tx, error) {
	switch t := tx.(type) {
	case nil:
		return nil, nil
	case *sql.Tx:
		if t == nil {
			return nil, fmt.Errorf("%w: nil *sql.Tx", leasehold.ErrUnsupportedTx)
		}
		return t, nil
	default:
		return nil, fmt.Errorf("%w: %T", leasehold.ErrUnsupportedTx, tx)
	}
}

// withTx runs fn in the caller's transaction when tx is non-nil, with its
// statements unprepared (tx may come from another *sql.DB on the file,
// stmtCache.own) and inside a savepoint (inSavepoint), and in the
// driver's own transaction otherwise, with queries prepared.
func (d *Driver) withTx(ctx context.Context, tx *sql.Tx, fn txFunc, queries ...string) error {
	if tx == nil {
		return d.inTx(ctx, fn, queries...)
	}
	// The caller's transaction runs on a connection to the file Open
	// opened, as the driver's own do: once that file is no longer at its
	// path, its commit would land where no one looks (ErrFileReplaced).
	if err := d.file.check(); err != nil {
		return err
	}
	// A caller's transaction begun DEFERRED takes the write lock at its
	// first write, after waiting for any other writer: take it before the
	// clock is read, so that the times fn stamps are not stale by that
	// wait (TestCallerTxStampsAfterTheWriteLock).
	if _, err := d.exec(ctx, tx, writeLockSQL); err != nil {
		return d.wrapErr(fmt.Errorf("sqlitedriver: take the write lock: %w", err))
	}
	now, err := d.txNow(ctx, tx)
	if err != nil {
		return d.wrapErr(err)
	}
	return d.wrapErr(inSavepoint(ctx, tx, now, fn))
}

// The savepoint withTx runs fn in, in a caller's transaction. SQLite does
// not abort a transaction when one of its statements fails: without it,
// the statements of fn that ran before the failure (the first jobs of a
// batch, the history row of a completion) would stay in the caller's
// transaction and commit with it, though the call reported failure.
//
// A caller's savepoint of the same name does no harm, nor would a call
// nested in fn: SQLite resolves a name to the innermost savepoint that
// bears it, and each call releases its own before returning.
const (
	savepointSQL        = `SAVEPOINT leasehold_call`
	releaseSavepointSQL = `RELEASE leasehold_call`
	// undoSavepointSQL undoes the writes since the savepoint, then drops
	// it, leaving the caller's transaction as it was before the call.
	undoSavepointSQL = `ROLLBACK TO leasehold_call; RELEASE leasehold_call`
)

// inSavepoint runs fn in tx inside a savepoint, so that fn's writes all
// stay in tx or none do, and tx stays usable after fn fails.
func inSavepoint(ctx context.Context, tx *sql.Tx, now int64, fn txFunc) error {
	if _, err := tx.ExecContext(ctx, savepointSQL); err != nil {
		return fmt.Errorf("sqlitedriver: open a savepoint in the caller's transaction: %w", err)
	}
	// fn fails most often because ctx ended, and database/sql refuses any
	// statement under an ended context: close the savepoint regardless.
	end := context.WithoutCancel(ctx)
	err := fn(ctx, tx, now)
	if err == nil {
		_, err = tx.ExecContext(end, releaseSavepointSQL)
		if err == nil {
			return nil
		}
		err = fmt.Errorf("sqlitedriver: release the savepoint in the caller's transaction: %w", err)
	}
	if _, undoErr := tx.ExecContext(end, undoSavepointSQL); undoErr != nil {
		return fmt.Errorf("%w (and undoing the call's writes in the caller's transaction failed: roll it back: %w)", err, undoErr)
	}
	return err
}

// writeLockSQL writes nothing, but takes the database's write lock for
// the transaction it runs in, as any write does (a no-op once held).
const writeLockSQL = `UPDATE leasehold_jobs SET id = id WHERE 0`

// txNow reads the database clock in tx.
func (d *Driver) txNow(ctx context.Context, tx *sql.Tx) (int64, error) {
	var us int64
	if err := d.queryRow(ctx, tx, nowSQL).Scan(&us); err != nil {
		return 0, fmt.Errorf("sqlitedriver: read clock: %w", err)
	}
	return us, nil
}

// inTx prepares queries, runs fn in a new transaction (BEGIN IMMEDIATE with
// Open's DSN) and commits it. It runs the whole transaction again, with a
// short backoff, when it failed with SQLITE_BUSY.
func (d *Driver) inTx(ctx context.Context, fn txFunc, queries ...string) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("sqlitedriver: the context ended before the transaction began: %w", err)
	}
	if err := d.file.check(); err != nil {
		return err
	}
	start := time.Now()
	d.prepare(ctx, nowSQL)
	d.prepare(ctx, queries...)
	backoff := 5 * time.Millisecond
	for retry := 0; ; retry++ {
		err := d.tryTx(ctx, start, fn)
		if err == nil || retry >= busyRetries || !isBusy(err) {
			return d.wrapErr(err)
		}
		t := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			t.Stop()
			return d.beginErr(ctx, start, err)
		case <-t.C:
		}
		backoff *= 2
	}
}

// tryTx runs fn in one transaction; start is when the caller began
// waiting for it.
func (d *Driver) tryTx(ctx context.Context, start time.Time, fn txFunc) (err error) {
	tx, err := d.db.BeginTx(ctx, nil)
	if err != nil {
		return d.beginErr(ctx, start, err)
	}
	d.stmts.track(tx)
	defer d.stmts.untrack(tx)
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	now, err := d.txNow(ctx, tx)
	if err != nil {
		return err
	}
	if err = fn(ctx, tx, now); err != nil {
		return err
	}
	if err = tx.Commit(); err != nil {
		return fmt.Errorf("sqlitedriver: commit: %w", err)
	}
	return nil
}

// isBusy reports whether err is SQLITE_BUSY (any extended code).
func isBusy(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code()&0xff == 5 // SQLITE_BUSY
}

// micros converts a duration to microseconds.
func micros(d time.Duration) int64 { return d.Microseconds() }

// fromMicros converts Unix microseconds to a UTC time.
func fromMicros(us int64) time.Time { return time.UnixMicro(us).UTC() }
