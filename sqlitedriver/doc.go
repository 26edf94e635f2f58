// Package sqlitedriver is the SQLite driver of leasehold, built on
// modernc.org/sqlite (pure Go, no cgo; database/sql driver name "sqlite").
//
// # Usage
//
//	d, err := sqlitedriver.Open("jobs.db")
//	if err != nil { ... }
//	defer d.Close()
//	if _, err := d.Migrate(ctx); err != nil { ... }
//	// hand d to leasehold as its Driver
//
// Open opens the file with the DSN that DSN returns:
//
//   - journal_mode=WAL: readers never block the writer, and the writer
//     never blocks readers;
//   - synchronous=FULL: every commit is fsynced, so no committed job is lost
//     on power failure (jobs can be payments);
//   - busy_timeout=10000 (BusyTimeout): a writer waits up to 10 s for
//     another process's write lock instead of failing with SQLITE_BUSY;
//   - foreign_keys=1;
//   - _txlock=immediate: every read-write transaction starts with BEGIN
//     IMMEDIATE, taking the write lock up front, so a transaction never has
//     to upgrade a read lock (which can fail with SQLITE_BUSY without
//     waiting).
//
// New wraps a *sql.DB the caller opened and owns (Close leaves it open).
// Open it with the same settings, for example with
// sql.Open("sqlite", sqlitedriver.DSN(path)), and call db.SetMaxOpenConns(1).
//
// # Single writer
//
// SQLite has one writer at a time per database file. The driver writes on
// a single connection (SetMaxOpenConns(1)), and every write is one short
// BEGIN IMMEDIATE transaction: a whole batch of claims, heartbeats or
// outcomes is one transaction and one fsync. A transaction that still fails
// with SQLITE_BUSY after the busy timeout is run again a few times with a
// short backoff. The fixed statements are prepared once on the connection
// and reused by every transaction.
//
// A Driver from Open also has ReaderConns read-only connections (PRAGMA
// query_only), which read while the writer writes (WAL), and one more,
// idle, that keeps the -wal file while the Driver is open. A claim's
// transaction returns only each lease's fence (id, attempt); the claimed
// jobs are read after the commit on a reader connection, and only those
// whose lease the claimer still holds are returned. The write lock is then
// held for the claim alone, not for copying and decoding a batch of jobs.
// Every other read outside a transaction (GetJob, ListJobs, Stats, the
// clock, ...) runs on them too, so none waits behind a write of the
// driver's that waits for the file's write lock.
// If that read fails, the claim releases its leases (fenced) before it
// returns the error. A Driver from New has only the caller's connection
// and reads the claimed jobs inside the claim's transaction; one from
// NewWithReader reads them on the caller's read-only *sql.DB (ReaderDSN),
// as Open's does, after checking that it is open on the writer's file.
//
// All times are INTEGER Unix microseconds read from SQLite's own clock
// (unixepoch('subsec'), millisecond resolution); the driver reads the clock
// once at the start of each transaction, while holding the write lock (and
// the fence, leaseHeldSQL, reads it again once it holds the lock), and
// never uses the Go process's clock. Durations are added to it.
//
// # Transitions
//
// Finish and RescueExpired move jobs out of processing by applying the
// driver.Transition the client computed, column by column, fenced by (id,
// status = 'processing', lease_owner, attempt); the SQL holds no state
// machine of its own and knows no outcome's name. A batch whose leases
// share one owner and one transition (typically all completed) is written
// by a statement built from the transition that sets only the columns it
// changes.
// RescueExpired reads the expired jobs, asks RescueParams.Decide for each
// transition and applies them, all in one BEGIN IMMEDIATE transaction.
//
// # Several processes
//
// Several processes (or several Drivers in one process) may open the same
// file at once, for example worker subprocesses: their transactions are
// serialized by SQLite's write lock, so each claim is still atomic and each
// job is leased by exactly one of them. The file must be on a local file
// system (WAL needs shared memory; not NFS): Open refuses, with ErrNotWAL,
// a file SQLite did not put in WAL mode, and an empty path or ":memory:",
// which give each connection a database of its own. There is no cross-process
// wake-up (the driver does not implement driver.Notifier): a client
// signals its own inserts in-process and other processes poll.
//
// The file must not be removed, moved or replaced (a backup restored over
// it) while a process has it open: the process's connections keep the file
// they opened, its writes would land where no other process looks, and its
// reads would show the old file's jobs. A Driver from Open checks before
// each write transaction, its own or a caller's, and each read outside one, that its path
// still names the file it opened, and that its write-ahead log (the -wal
// file, which SQLite removes only when the last connection closes) is
// still the one its connections write, and fails the call with
// ErrFileReplaced when either is not (Driver.CheckFile makes the same
// check); restart the process.
//
// # Transactions
//
// Insert, Finish, FenceTx, Checkpoint and Resolve accept as their tx
// argument a *sql.Tx begun on this database file: on d.DB(), or on the
// application's own *sql.DB opened on the same file with DSN(path). A job
// is then enqueued, or completed under its fence, atomically with the
// caller's own writes. Any other type, and a nil *sql.Tx, yields
// leasehold.ErrUnsupportedTx; a *sql.Tx on another file is not told apart,
// and writes there. In a caller's transaction the driver's statements run
// unprepared. From a handler, CompleteTx completes the job in such a
// transaction with its type checked at compile time, finding the running
// client in the handler's context.
//
// In a caller's transaction a call's statements run inside a savepoint: a
// call that fails leaves the transaction as it was before the call, and
// usable. One exception: a context that ends while a write statement runs
// interrupts it, and SQLite then rolls back the caller's whole
// transaction, its earlier writes included; database/sql does not know,
// so later statements on that *sql.Tx would run outside any transaction.
// After a call fails with the context's error, roll the transaction back
// and begin again.
//
// A transaction on d.DB() holds the driver's one connection until commit
// or rollback: every other call on the Driver (including those of the
// client's workers) waits meanwhile, and a call made with a nil tx from the
// goroutine that holds the transaction deadlocks until its context ends.
// One on another *sql.DB holds the file's write lock instead, as another
// process would: the driver's writes wait for it up to BusyTimeout, a few
// times over, and then fail with SQLITE_BUSY (the reads of a Driver from
// Open or NewWithReader go on meanwhile), and so does a call made with
// a nil tx from the goroutine that holds it. Open that *sql.DB with DSN, so
// that its transactions begin IMMEDIATE: one begun DEFERRED that reads
// before its first driver call fails with SQLITE_BUSY (its snapshot is
// stale) when the Driver has written since. Either way, keep such
// transactions short and pass the tx to every driver call inside them.
package sqlitedriver
