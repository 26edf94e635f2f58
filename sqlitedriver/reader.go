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
	d.readStmts.mu.Lock()
	s := d.readStmts.m[query]
	d.readStmts.mu.Unlock()
	if s == nil {
		var err error
		if s, err = d.reader.PrepareContext(ctx, query); err != nil {
			return d.reader.QueryContext(ctx, query, args...)
		}
		d.readStmts.mu.Lock()
		if d.readStmts.m == nil {
			d.readStmts.m = make(map[string]*sql.Stmt)
		}
		if cached := d.readStmts.m[query]; cached != nil {
			_ = s.Close() // another goroutine cached it first
			s = cached
		} else {
			d.readStmts.m[query] = s
		}
		d.readStmts.mu.Unlock()
	}
	return s.QueryContext(ctx, args...)
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
