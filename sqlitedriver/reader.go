package sqlitedriver

import (
	"context"
	"database/sql"
	"fmt"
)

// ReaderConns is how many read-only connections Open opens beside the
// writer, for what a claim reads of the jobs it leased (claimThenRead).
// In WAL mode they read while the writer writes.
const ReaderConns = 2

// openReader opens the read-only connections on path: Open's DSN with
// query_only, so that no statement on them can write.
func openReader(path string) (*sql.DB, error) {
	db, err := sql.Open("sqlite", DSN(path)+"&_pragma=query_only(1)")
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
// stmtCache). A query that fails to prepare (say, before Migrate) is run
// unprepared, where its error surfaces.
func (d *Driver) readQuery(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if s := d.readStmts.get(ctx, d.reader, query); s != nil {
		return s.QueryContext(ctx, args...)
	}
	return d.reader.QueryContext(ctx, query, args...)
}

// closeReader closes the reader connections and their statements, if
// any.
func (d *Driver) closeReader() error {
	if d.reader == nil {
		return nil
	}
	err := d.readStmts.closeAll()
	if cerr := d.reader.Close(); err == nil {
		err = cerr
	}
	return err
}
