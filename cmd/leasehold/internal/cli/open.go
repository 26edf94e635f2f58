package cli

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/pgdriver"
	"github.com/leasehold/leasehold/sqlitedriver"
)

// pingTimeout bounds the first round trip that proves the database is
// reachable.
const pingTimeout = 15 * time.Second

// connectTimeout is added to PostgreSQL URLs that set none, in seconds,
// so an unreachable host fails instead of hanging.
const connectTimeout = "10"

// DB is an open database: the leasehold driver, and a database/sql handle
// on the same database for application tables (opened on demand).
type DB struct {
	Target Target
	Driver driver.Driver
	sqlDB  *sql.DB
	ownSQL bool
}

// OpenOptions tune Open.
type OpenOptions struct {
	// Create allows creating a missing SQLite file. Without it a missing
	// file is an error that suggests `leasehold migrate`.
	Create bool
}

// Open opens the driver for t and checks the database answers.
func Open(ctx context.Context, t Target, opts OpenOptions) (*DB, error) {
	var (
		drv driver.Driver
		err error
	)
	switch t.Dialect {
	case Postgres:
		drv, err = pgdriver.Open(ctx, withConnectTimeout(t.URL))
	default:
		if err := checkSQLiteFile(t.Path, opts.Create); err != nil {
			return nil, err
		}
		drv, err = sqlitedriver.Open(t.Path)
	}
	if err != nil {
		if t.Dialect != Postgres && strings.Contains(err.Error(), t.Path) {
			return nil, Failf("cannot open database: %w", err) // the error names the file
		}
		return nil, Failf("cannot open database %s: %w", t, err)
	}
	pctx, cancel := context.WithTimeout(ctx, pingTimeout)
	defer cancel()
	if _, err := drv.Now(pctx); err != nil {
		_ = drv.Close()
		if refused := serverRefused(t, err); refused != nil {
			return nil, refused
		}
		return nil, Failf("cannot reach database %s: %w", t, err)
	}
	return &DB{Target: t, Driver: drv}, nil
}

// checkSQLiteFile refuses, before SQLite opens it (and, opening it, writes
// to it), a path that is a directory, and unless create is set a missing
// or empty file: opening an empty file would make it a database with no
// leasehold tables, which the command would then refuse.
func checkSQLiteFile(path string, create bool) error {
	fi, err := os.Stat(path)
	switch {
	case err == nil && fi.IsDir():
		return Failf("%s is a directory, not a database file (pass --db)", path)
	case create:
		return nil
	case errors.Is(err, fs.ErrNotExist):
		return Failf("no database at %s (run `leasehold migrate` to create it, or pass --db)", path)
	case err == nil && fi.Mode().IsRegular() && fi.Size() == 0:
		return Failf("%s is an empty file: it has no leasehold tables: run `leasehold migrate` to create them, or pass --db", path)
	}
	return nil
}

// serverRefused restates err when it is the answer of a PostgreSQL server
// that was reached and refused the session (no such database or role, a
// wrong password...), as a runtime failure (exit code 1); it returns nil
// for any other error, such as a server that could not be reached.
func serverRefused(t Target, err error) error {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return nil
	}
	var msg string
	switch {
	case (pgErr.Code == "3D000" || pgErr.Code == "28000") && strings.HasSuffix(pgErr.Message, "does not exist"):
		msg = fmt.Sprintf("%s on the server of %s", pgErr.Message, t) // database "x" (or role "x") does not exist
	case pgErr.Code == "28P01" || pgErr.Code == "28000":
		msg = fmt.Sprintf("the server of %s refused the login: %s", t, pgErr.Message)
	default:
		msg = fmt.Sprintf("the server of %s answered with an error: %s", t, pgErr.Message)
	}
	return &Error{Code: ExitFailure, Err: Restate(err, "%s (SQLSTATE %s)", msg, pgErr.Code)}
}

// withConnectTimeout adds connect_timeout to a PostgreSQL URL that sets
// none, and that the environment (PGCONNECT_TIMEOUT) leaves unset too.
// The parameter is added as text where pgx reads the query, the rest of
// the URL kept byte for byte: a round trip through net/url would move a
// password holding a raw '#' (to net/url, a fragment) and put the query
// inside what pgx reads as the password.
func withConnectTimeout(raw string) string {
	if os.Getenv("PGCONNECT_TIMEOUT") != "" || queryHas(raw, "connect_timeout") {
		return raw
	}
	param := "connect_timeout=" + connectTimeout
	switch {
	case queryIndex(raw) < 0:
		return raw + "?" + param
	case strings.HasSuffix(raw, "?") || strings.HasSuffix(raw, "&"):
		// pgx refuses an empty pair: "?&x=1" or "a=1&&x=1".
		return raw + param
	default:
		return raw + "&" + param
	}
}

// SQL returns a database/sql handle on the database, for application
// tables written in the same transaction as a fenced completion: the
// SQLite driver's own handle, or a pgx stdlib pool on the same URL.
func (db *DB) SQL() (*sql.DB, error) {
	if db.sqlDB != nil {
		return db.sqlDB, nil
	}
	switch d := db.Driver.(type) {
	case *sqlitedriver.Driver:
		db.sqlDB = d.DB()
	default:
		s, err := sql.Open("pgx", withConnectTimeout(db.Target.URL))
		if err != nil {
			return nil, fmt.Errorf("open %s: %w", db.Target, err)
		}
		db.sqlDB, db.ownSQL = s, true
	}
	return db.sqlDB, nil
}

// closeTimeout bounds Close. Closing a PostgreSQL pool waits for the
// connections it is still opening, each up to its connect timeout, when
// the server does not answer; a command about to exit does not wait for
// them.
const closeTimeout = time.Second

// Close closes what Open and SQL opened, giving up after closeTimeout.
func (db *DB) Close() error {
	done := make(chan error, 1)
	go func() { done <- db.close() }()
	t := time.NewTimer(closeTimeout)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return fmt.Errorf("close %s: gave up after %s (the database does not answer)", db.Target, FormatDuration(closeTimeout))
	}
}

func (db *DB) close() error {
	var errs []error
	if db.ownSQL {
		errs = append(errs, db.sqlDB.Close())
	}
	errs = append(errs, db.Driver.Close())
	return errors.Join(errs...)
}
