package pgdriver

import (
	"context"
	"database/sql"
	"fmt"
	"reflect"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	leasehold "github.com/leasehold/leasehold"
)

// querier runs the driver's SQL on a pool, a pgx.Tx or a *sql.Tx alike.
type querier interface {
	exec(ctx context.Context, sql string, args ...any) (int64, error)
	query(ctx context.Context, sql string, args ...any) (rows, error)
}

// rows is the part of pgx.Rows and *sql.Rows the driver uses.
type rows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close() error
}

// pgxRunner is implemented by *pgxpool.Pool, pgx.Tx and *pgx.Conn.
type pgxRunner interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
}

type pgxQuerier struct{ r pgxRunner }

func (q pgxQuerier) exec(ctx context.Context, sql string, args ...any) (int64, error) {
	tag, err := q.r.Exec(ctx, sql, args...)
	return tag.RowsAffected(), err
}

func (q pgxQuerier) query(ctx context.Context, sql string, args ...any) (rows, error) {
	rs, err := q.r.Query(ctx, sql, args...)
	if err != nil {
		return nil, err
	}
	return pgxRows{rs}, nil
}

// pgxRows adapts pgx.Rows, whose Close returns nothing.
type pgxRows struct{ pgx.Rows }

func (r pgxRows) Close() error {
	r.Rows.Close()
	return r.Rows.Err()
}

type sqlQuerier struct{ tx *sql.Tx }

func (q sqlQuerier) exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := q.tx.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (q sqlQuerier) query(ctx context.Context, query string, args ...any) (rows, error) {
	return q.tx.QueryContext(ctx, query, args...)
}

// querierFor returns where to run a statement given a caller's tx: the main
// pool (autocommit) when tx is nil, the transaction otherwise. A nil
// *sql.Tx or a nil pointer implementing pgx.Tx is refused, not taken for
// no transaction (nor called, which would panic).
func (d *Driver) querierFor(tx any) (querier, error) {
	switch t := tx.(type) {
	case nil:
		return pgxQuerier{d.pool}, nil
	case *sql.Tx:
		if t == nil {
			return nil, fmt.Errorf("%w: nil %T", leasehold.ErrUnsupportedTx, tx)
		}
		return sqlQuerier{t}, nil
	case pgx.Tx:
		if nilPointer(t) {
			return nil, fmt.Errorf("%w: nil %T", leasehold.ErrUnsupportedTx, tx)
		}
		return pgxQuerier{t}, nil
	default:
		return nil, fmt.Errorf("%w: %T", leasehold.ErrUnsupportedTx, tx)
	}
}

// CheckTx implements driver.TxChecker: it refuses, with
// leasehold.ErrUnsupportedTx, a tx that is neither a pgx.Tx nor a
// *sql.Tx, or a nil one of either type.
func (d *Driver) CheckTx(tx any) error {
	_, err := d.querierFor(tx)
	return err
}

// nilPointer reports whether v holds a nil pointer (or another nil
// reference), such as a *pgxpool.Tx declared but never begun.
func nilPointer(v any) bool {
	switch r := reflect.ValueOf(v); r.Kind() {
	case reflect.Pointer, reflect.Map, reflect.Slice, reflect.Chan, reflect.Func:
		return r.IsNil()
	}
	return false
}

// scanner is one row to scan.
type scanner interface {
	Scan(dest ...any) error
}

// collect runs a query and scans every row with scan.
func collect[T any](ctx context.Context, q querier, scan func(scanner) (T, error), query string, args ...any) ([]T, error) {
	rs, err := q.query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	var out []T
	for rs.Next() {
		v, err := scan(rs)
		if err != nil {
			return nil, err
		}
		out = append(out, v)
	}
	if err := rs.Err(); err != nil {
		return nil, err
	}
	return out, rs.Close()
}

// micros converts a duration to the microseconds the SQL adds to now().
func micros(d time.Duration) int64 { return d.Microseconds() }
