package sqlitedriver

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
)

// ReaderConns is how many read-only connections Open opens beside the
// writer, for what a claim reads of the jobs it leased (claimThenRead).
// In WAL mode they read while the writer writes.
const ReaderConns = 2

// ReaderDSN returns the data source name of Open's read-only connections
// on path: DSN with query_only, so that no statement on them can write.
// A caller who opens its own databases for NewWithReader opens the reader
// with it, with db.SetMaxOpenConns(ReaderConns).
func ReaderDSN(path string) string { return DSN(path) + "&_pragma=query_only(1)" }

// openReader opens the read-only connections on path (ReaderDSN).
func openReader(path string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", ReaderDSN(path))
	if err != nil {
		return nil, fmt.Errorf("sqlitedriver: open %s for reading: %w", path, err)
	}
	db.SetMaxOpenConns(ReaderConns)
	db.SetMaxIdleConns(ReaderConns)
	db.SetConnMaxLifetime(0)
	db.SetConnMaxIdleTime(0)
	return db, nil
}

// readQuery runs query on the reader connections, prepared once (see
// stmtCache), after checking that the file is still the one Open opened.
// A query that fails to prepare (say, before Migrate) is run unprepared,
// where its error surfaces.
func (d *Driver) readQuery(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if err := d.file.check(); err != nil {
		return nil, err
	}
	if s := d.readStmts.get(ctx, d.reader, query); s != nil {
		return s.QueryContext(ctx, args...)
	}
	return d.reader.QueryContext(ctx, query, args...)
}

// closeReader closes the statements prepared on the reader connections,
// if any, and the connections themselves if Open opened them.
func (d *Driver) closeReader() error {
	if d.reader == nil {
		return nil
	}
	err := d.readStmts.closeAll()
	if !d.owned {
		return err
	}
	if cerr := closeOwned(d.reader); err == nil {
		err = cerr
	}
	return err
}

// sameFile returns an error unless db and reader have the same main
// database file: a reader on another file would find none of the jobs a
// claim leased, and every claim would release its leases.
func sameFile(ctx context.Context, db, reader *sql.DB) error {
	a, err := mainFile(ctx, db)
	if err != nil {
		return fmt.Errorf("sqlitedriver: NewWithReader: %w", err)
	}
	b, err := mainFile(ctx, reader)
	if err != nil {
		return fmt.Errorf("sqlitedriver: NewWithReader: %w", err)
	}
	if a == "" || a != b {
		return fmt.Errorf("%w: the reader's database file %q is not the writer's %q (an in-memory database has no file to share)",
			ErrReaderNotSameFile, b, a)
	}
	return nil
}

// ErrReaderNotSameFile is returned by NewWithReader when the reader is not
// open on the writer's database file.
var ErrReaderNotSameFile = errors.New("sqlitedriver: NewWithReader: reader and writer on different files")

// mainFile returns the file of db's main database ("" in memory, or for
// a temporary database).
func mainFile(ctx context.Context, db *sql.DB) (string, error) {
	var file string
	err := db.QueryRowContext(ctx, "SELECT file FROM pragma_database_list WHERE name = 'main'").Scan(&file)
	if err != nil {
		return "", fmt.Errorf("read the database file's name: %w", err)
	}
	return file, nil
}
