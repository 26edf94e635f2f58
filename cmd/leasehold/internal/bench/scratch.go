package bench

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/pgdriver"
	"github.com/leasehold/leasehold/sqlitedriver"
)

// scratch is a fresh, empty, migrated leasehold database for one
// measurement: a new schema of the PostgreSQL database, or a new SQLite
// file in a temporary directory beside the target file. Close drops it.
type scratch struct {
	b      *bench
	schema string // PostgreSQL
	url    string // PostgreSQL URL whose search_path is schema
	path   string // SQLite file
	drv    driver.Driver
	pool   *pgxpool.Pool // PostgreSQL: the driver's pool
	sqlDB  *sql.DB       // SQLite: a second handle for bare SQL (opened on demand)
	dir    string
}

// newScratch creates and migrates a scratch database.
func (b *bench) newScratch(ctx context.Context) (*scratch, error) {
	s := &scratch{b: b}
	suffix, err := randomHex()
	if err != nil {
		return nil, err
	}
	if b.postgres() {
		err = s.openPostgres(ctx, "leasehold_bench_"+suffix)
	} else {
		err = s.openSQLite(suffix)
	}
	if err == nil {
		_, err = s.drv.Migrate(ctx)
	}
	if err != nil {
		s.Close()
		return nil, fmt.Errorf("bench: scratch database: %w", err)
	}
	return s, nil
}

func (s *scratch) openPostgres(ctx context.Context, schema string) error {
	if err := s.b.admin(ctx, "CREATE SCHEMA "+schema); err != nil {
		return err
	}
	s.schema = schema
	u, err := url.Parse(s.b.opts.URL)
	if err != nil {
		return fmt.Errorf("parse url: %w", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	s.url = u.String()
	cfg, err := pgxpool.ParseConfig(s.url)
	if err != nil {
		return fmt.Errorf("parse url: %w", err)
	}
	s.pool, err = pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	d, err := pgdriver.New(s.pool)
	if err != nil {
		return err
	}
	s.drv = d
	return nil
}

func (s *scratch) openSQLite(suffix string) error {
	dir, err := os.MkdirTemp(filepath.Dir(s.b.opts.Path), "leasehold-bench-"+suffix+"-")
	if err != nil {
		return fmt.Errorf("temporary directory: %w", err)
	}
	s.dir = dir
	s.path = filepath.Join(dir, "bench.db")
	d, err := sqlitedriver.Open(s.path)
	if err != nil {
		return err
	}
	s.drv = d
	return nil
}

// secondDriver opens another driver on the scratch database, with its own
// pool or connection, as another process would.
func (s *scratch) secondDriver(ctx context.Context) (driver.Driver, func(), error) {
	var (
		d   driver.Driver
		err error
	)
	if s.pool != nil {
		d, err = pgdriver.Open(ctx, s.url)
	} else {
		d, err = sqlitedriver.Open(s.path)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("bench: second driver: %w", err)
	}
	return d, func() { _ = d.Close() }, nil
}

// bareSQLite returns a second single-connection handle on the SQLite file,
// opened like the driver's, for the bare-SQL ceiling.
func (s *scratch) bareSQLite() (*sql.DB, error) {
	if s.sqlDB == nil {
		db, err := sql.Open("sqlite", sqlitedriver.DSN(s.path))
		if err != nil {
			return nil, fmt.Errorf("bench: open %s: %w", s.path, err)
		}
		db.SetMaxOpenConns(1)
		s.sqlDB = db
	}
	return s.sqlDB, nil
}

// settle prepares a filled scratch database for a timed measurement: it
// analyzes the tables, then checkpoints, so that every measurement starts
// with the same write-ahead-log state instead of whichever one a
// checkpoint happens to overlap (PostgreSQL checkpoints every few
// measurements at the default max_wal_size, and the writes after one cost
// full-page images). A role not allowed to CHECKPOINT skips it.
// insufficientPrivilege is PostgreSQL's SQLSTATE for a statement the role
// may not run.
const insufficientPrivilege = "42501"

func (s *scratch) settle(ctx context.Context) error {
	if s.pool == nil {
		if _, err := s.sqliteExec(ctx, "ANALYZE"); err != nil {
			return fmt.Errorf("bench: analyze: %w", err)
		}
		if _, err := s.sqliteExec(ctx, "PRAGMA wal_checkpoint(RESTART)"); err != nil {
			return fmt.Errorf("bench: checkpoint: %w", err)
		}
		return nil
	}
	if _, err := s.pool.Exec(ctx, "ANALYZE leasehold_jobs, leasehold_attempts"); err != nil {
		return fmt.Errorf("bench: analyze: %w", err)
	}
	var pgErr *pgconn.PgError
	if _, err := s.pool.Exec(ctx, "CHECKPOINT"); err != nil &&
		!(errors.As(err, &pgErr) && pgErr.Code == insufficientPrivilege) {
		return fmt.Errorf("bench: checkpoint: %w", err)
	}
	return nil
}

func (s *scratch) sqliteExec(ctx context.Context, query string) (sql.Result, error) {
	db, err := s.bareSQLite()
	if err != nil {
		return nil, err
	}
	return db.ExecContext(ctx, query)
}

// Close closes the driver and drops the scratch database.
func (s *scratch) Close() {
	if s.sqlDB != nil {
		_ = s.sqlDB.Close()
	}
	if s.drv != nil {
		_ = s.drv.Close()
	}
	if s.pool != nil {
		s.pool.Close()
	}
	if s.schema != "" {
		if err := s.b.admin(context.Background(), "DROP SCHEMA "+s.schema+" CASCADE"); err != nil {
			s.b.logf("bench: drop schema %s: %v", s.schema, err)
		}
	}
	if s.dir != "" {
		_ = os.RemoveAll(s.dir)
	}
}

// admin runs one statement on a connection of its own.
func (b *bench) admin(ctx context.Context, stmt string) error {
	conn, err := pgx.Connect(ctx, b.opts.URL)
	if err != nil {
		return fmt.Errorf("connect: %w", err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, stmt); err != nil {
		return fmt.Errorf("%s: %w", stmt, err)
	}
	return nil
}

func randomHex() (string, error) {
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", fmt.Errorf("bench: random: %w", err)
	}
	return hex.EncodeToString(b[:]), nil
}

var errNoStatements = errors.New("pg_stat_statements is not available")
