package sqlitedriver

import (
	"context"
	"database/sql"
	"fmt"
	"sync"
)

// stmtCache holds the driver's statements prepared on its *sql.DB: parsing
// a claim statement costs ten times more than running it, so every fixed
// statement is prepared once per connection and reused in every
// transaction the driver begins (through Tx.StmtContext).
type stmtCache struct {
	mu sync.Mutex
	m  map[string]*sql.Stmt
	// own holds the transactions the driver began itself (tryTx), the
	// only ones a cached statement runs in. A caller's *sql.Tx may have
	// been begun on another *sql.DB open on the same file, where
	// database/sql refuses a statement of the driver's *sql.DB ("statement
	// from different database used"), and nothing tells the two apart:
	// its statements run unprepared, whichever pool it came from.
	own map[*sql.Tx]struct{}
}

// track records tx as one the driver began, in which the cached
// statements may run, until untrack.
func (c *stmtCache) track(tx *sql.Tx) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.own == nil {
		c.own = make(map[*sql.Tx]struct{})
	}
	c.own[tx] = struct{}{}
}

// untrack forgets tx, once it has ended.
func (c *stmtCache) untrack(tx *sql.Tx) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.own, tx)
}

// prepare makes sure queries are in the cache, best effort: a query that
// fails to prepare (say, before Migrate) is left out and run unprepared,
// where its error surfaces. It takes a connection from the pool, so it must
// not run while the calling goroutine holds one in a transaction (with one
// connection it would wait for itself).
func (d *Driver) prepare(ctx context.Context, queries ...string) {
	for _, q := range queries {
		d.stmts.get(ctx, d.db, q)
	}
}

// get returns query prepared on db, preparing and caching it on first use;
// nil when it fails to prepare.
func (c *stmtCache) get(ctx context.Context, db *sql.DB, query string) *sql.Stmt {
	c.mu.Lock()
	s := c.m[query]
	c.mu.Unlock()
	if s != nil {
		return s
	}
	s, err := db.PrepareContext(ctx, query)
	if err != nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.m == nil {
		c.m = make(map[string]*sql.Stmt)
	}
	if cached := c.m[query]; cached != nil {
		_ = s.Close() // another goroutine cached it first
		return cached
	}
	c.m[query] = s
	return s
}

// cached returns the prepared statement for query in tx, or nil when query
// has not been prepared or tx is not one the driver began (a caller's).
func (d *Driver) cached(ctx context.Context, tx *sql.Tx, query string) *sql.Stmt {
	d.stmts.mu.Lock()
	s := d.stmts.m[query]
	_, own := d.stmts.own[tx]
	d.stmts.mu.Unlock()
	if s == nil || !own {
		return nil
	}
	return tx.StmtContext(ctx, s)
}

// txStmt returns query prepared in tx: the cached statement, or one
// prepared now (closed when tx ends), as in a caller's transaction.
func (d *Driver) txStmt(ctx context.Context, tx *sql.Tx, query string) (*sql.Stmt, error) {
	if s := d.cached(ctx, tx, query); s != nil {
		return s, nil
	}
	s, err := tx.PrepareContext(ctx, query)
	if err != nil {
		return nil, fmt.Errorf("sqlitedriver: prepare: %w", err)
	}
	return s, nil
}

// query runs query in tx, prepared when cached.
func (d *Driver) query(ctx context.Context, tx *sql.Tx, query string, args ...any) (*sql.Rows, error) {
	if s := d.cached(ctx, tx, query); s != nil {
		return s.QueryContext(ctx, args...)
	}
	return tx.QueryContext(ctx, query, args...)
}

// queryRow runs query in tx, prepared when cached.
func (d *Driver) queryRow(ctx context.Context, tx *sql.Tx, query string, args ...any) *sql.Row {
	if s := d.cached(ctx, tx, query); s != nil {
		return s.QueryRowContext(ctx, args...)
	}
	return tx.QueryRowContext(ctx, query, args...)
}

// exec runs query in tx, prepared when cached.
func (d *Driver) exec(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	if s := d.cached(ctx, tx, query); s != nil {
		return s.ExecContext(ctx, args...)
	}
	return tx.ExecContext(ctx, query, args...)
}

// closeStmts closes the cached statements.
func (d *Driver) closeStmts() error { return d.stmts.closeAll() }

// closeAll closes and forgets the statements of c.
func (c *stmtCache) closeAll() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	var first error
	for q, s := range c.m {
		if err := s.Close(); err != nil && first == nil {
			first = err
		}
		delete(c.m, q)
	}
	return first
}

// dbQuery runs query outside a transaction, prepared once, after checking
// that the file is still the one Open opened (identity.go): on the reader
// connections when the driver has them, so that no read waits behind a
// write of the driver's that itself waits for the file's write lock
// (another connection's transaction holding it), else on the writer.
func (d *Driver) dbQuery(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if d.reader != nil {
		return d.readQuery(ctx, query, args...)
	}
	if err := d.file.check(); err != nil {
		return nil, err
	}
	d.prepare(ctx, query)
	d.stmts.mu.Lock()
	s := d.stmts.m[query]
	d.stmts.mu.Unlock()
	if s == nil {
		return d.db.QueryContext(ctx, query, args...)
	}
	return s.QueryContext(ctx, args...)
}

// dbQueryRow runs query outside a transaction, prepared once, on the
// reader connections when the driver has them (as dbQuery). Its callers
// check the file's identity first (a *sql.Row cannot carry that error).
func (d *Driver) dbQueryRow(ctx context.Context, query string, args ...any) *sql.Row {
	if d.reader != nil {
		if s := d.readStmts.get(ctx, d.reader, query); s != nil {
			return s.QueryRowContext(ctx, args...)
		}
		return d.reader.QueryRowContext(ctx, query, args...)
	}
	d.prepare(ctx, query)
	d.stmts.mu.Lock()
	s := d.stmts.m[query]
	d.stmts.mu.Unlock()
	if s == nil {
		return d.db.QueryRowContext(ctx, query, args...)
	}
	return s.QueryRowContext(ctx, args...)
}
