package pgdriver

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	leasehold "github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one embedded, numbered schema change.
type migration struct {
	version int
	name    string
	sql     string
}

// ErrSchemaElsewhere reports that leasehold's tables, as the connection's
// search_path finds them, are in another schema than the first one on that
// path (current_schema()), where migrations create tables. The driver's
// statements would use those tables, but a migration would create a
// second, empty set in the first schema and every later connection would
// use that one, leaving the jobs behind; so Migrate and SchemaVersion
// refuse, with a *SchemaElsewhereError, before anything is created. The
// fix is to put the schema holding the tables first on search_path.
var ErrSchemaElsewhere = errors.New("pgdriver: leasehold's tables are in another schema than the first on search_path")

// SchemaElsewhereError is the error of ErrSchemaElsewhere, naming both
// schemas.
type SchemaElsewhereError struct {
	// Tables is the schema holding leasehold_migrations, found through
	// search_path.
	Tables string
	// Current is current_schema(): where CREATE TABLE puts new tables
	// ("" when no schema on search_path exists).
	Current string
}

// Error names both schemas and how to put the tables' schema first.
func (e *SchemaElsewhereError) Error() string {
	return fmt.Sprintf("pgdriver: leasehold's tables are in schema %q, but search_path puts schema %q before it, "+
		"where migrations would create a second, empty set of tables: put %q first on search_path "+
		"(in the connection URL, search_path=%s or options=-csearch_path=%s)",
		e.Tables, e.Current, e.Tables, e.Tables, e.Tables)
}

// Unwrap makes errors.Is match ErrSchemaElsewhere.
func (e *SchemaElsewhereError) Unwrap() error { return ErrSchemaElsewhere }

// tablesSchemaQuery finds the schema of leasehold_migrations as unqualified
// names resolve it (along the whole search_path; NULL when there is none),
// and current_schema(), where CREATE TABLE IF NOT EXISTS looks and creates.
const tablesSchemaQuery = `SELECT (SELECT n.nspname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE c.oid = to_regclass('leasehold_migrations')),
	coalesce(current_schema(), '')`

// rowQuerier is what checkTablesSchema reads through: the pool or a
// pgx.Tx.
type rowQuerier interface {
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// checkTablesSchema reports whether leasehold_migrations exists where the
// search_path finds it, and refuses (*SchemaElsewhereError) when that is
// not current_schema(). The driver's statements resolve names along the
// whole path, but CREATE TABLE IF NOT EXISTS and the migrations' advisory
// lock use only the first schema: one rule, the tables live in
// current_schema(), keeps them in one place.
func checkTablesSchema(ctx context.Context, q rowQuerier) (exists bool, err error) {
	var (
		tables  *string
		current string
	)
	if err := q.QueryRow(ctx, tablesSchemaQuery).Scan(&tables, &current); err != nil {
		return false, err
	}
	if tables == nil {
		return false, nil
	}
	if *tables != current {
		return true, &SchemaElsewhereError{Tables: *tables, Current: current}
	}
	return true, nil
}

// migrateLockKey namespaces the advisory lock that serialises migrations;
// the second key is a hash of the current schema, so separate schemas of one
// database migrate independently. Since tables in another schema than the
// current one are refused, every process that migrates a set of tables
// takes the same lock, whatever the rest of its search_path.
const migrateLockKey = 0x1ea5e

const createMigrationsTable = `CREATE TABLE IF NOT EXISTS leasehold_migrations (
	version    integer PRIMARY KEY,
	applied_at timestamptz NOT NULL DEFAULT now()
)`

// migrationLock is how a migration waits for the locks of the tables it
// changes. A statement that waits for a table's lock behind a long
// transaction (one that enqueued a job and went on with other work, say)
// makes every later writer of that table wait behind it in turn: the
// workers' heartbeats and finishes with them, until their leases run out.
// So each migration waits at most Timeout for a lock (lock_timeout), then
// gives up, letting those writers through, and is tried again after
// Pause, Tries times in all.
type migrationLock struct {
	Timeout time.Duration
	Pause   time.Duration
	Tries   int
}

// lockNotAvailable is the SQLSTATE of a lock_timeout that ran out.
const lockNotAvailable = "55P03"

// The default migrationLock holds job writes up for at most 2 s at a
// time, well within a heartbeat interval, and keeps trying for about a
// minute.
const (
	migrationLockTimeout = 2 * time.Second
	migrationLockPause   = 2 * time.Second
	migrationLockTries   = 15
)

// Migrate applies the embedded migrations that are not applied yet, in
// order, each in its own transaction under pg_advisory_xact_lock, and
// reports the versions before and after. It is idempotent and safe when
// several processes run it at once. Tables found through search_path in
// another schema than the first on it are refused before anything is
// created, with a *SchemaElsewhereError matching ErrSchemaElsewhere
// (checked again under the lock of each migration, since another process
// may create tables in between). A database with a migration newer than
// the embedded ones is refused before anything is applied, with a
// *leasehold.SchemaVersionError matching leasehold.ErrSchemaTooNew. A
// migration waits at most 2 s for a table's lock, so that jobs' writes do
// not queue behind it for longer, and is tried again (15 tries, 2 s apart)
// while another transaction holds the lock; the error of the last try
// names the migration and how long each try waited (PostgreSQL's lock
// timeout names no table: pg_locks shows who held it).
func (d *Driver) Migrate(ctx context.Context) (*driver.MigrateResult, error) {
	ms, err := loadMigrations()
	if err != nil {
		return nil, err
	}
	known := latestVersion(ms)
	v, err := d.SchemaVersion(ctx)
	if errors.Is(err, ErrSchemaElsewhere) {
		return nil, err
	}
	if err == nil && v.Database >= known {
		// Up to date, or newer: nothing to apply, and no DDL, so that a
		// role that may only read and write the tables can run it.
		if v.Database > known {
			return nil, &leasehold.SchemaVersionError{Database: v.Database, Known: known}
		}
		return &driver.MigrateResult{From: v.Database, To: v.Database}, nil
	}
	res := &driver.MigrateResult{}
	for i, m := range ms {
		var (
			current int
			applied bool
		)
		err := d.migLock.retry(ctx, func() error {
			return pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) (err error) {
				current, applied, err = applyMigration(ctx, tx, m, known, d.migLock.Timeout)
				return err
			})
		})
		if errors.Is(err, leasehold.ErrSchemaTooNew) {
			return nil, err
		}
		if err != nil {
			return nil, fmt.Errorf("pgdriver: migrate %s: %w", m.name, err)
		}
		if i == 0 {
			res.From = current
		}
		res.To = max(res.To, current, m.version)
		if applied {
			res.Applied++
		}
	}
	return res, nil
}

// applyMigration applies m in tx unless it is already recorded. It returns
// the database's schema version before m, and whether it applied m.
func applyMigration(ctx context.Context, tx pgx.Tx, m migration, known int, lockTimeout time.Duration) (int, bool, error) {
	lock := "SELECT pg_advisory_xact_lock($1, hashtext(coalesce(current_schema(), '')))"
	if _, err := tx.Exec(ctx, lock, int32(migrateLockKey)); err != nil {
		return 0, false, err
	}
	// Under the lock: another process may have created the tables, in a
	// schema this connection's search_path puts behind the first, since
	// Migrate looked.
	if _, err := checkTablesSchema(ctx, tx); err != nil {
		return 0, false, err
	}
	if _, err := tx.Exec(ctx, createMigrationsTable); err != nil {
		return 0, false, err
	}
	var (
		current int
		done    bool
	)
	err := tx.QueryRow(ctx, `SELECT coalesce(max(version), 0), coalesce(bool_or(version = $1), false)
		FROM leasehold_migrations`, m.version).Scan(&current, &done)
	if err != nil {
		return 0, false, err
	}
	if current > known {
		return current, false, &leasehold.SchemaVersionError{Database: current, Known: known}
	}
	if done {
		return current, false, nil
	}
	if lockTimeout > 0 {
		set := fmt.Sprintf("SET LOCAL lock_timeout = %d", lockTimeout.Milliseconds())
		if _, err := tx.Exec(ctx, set); err != nil {
			return current, false, err
		}
	}
	if _, err := tx.Exec(ctx, m.sql); err != nil {
		return current, false, err
	}
	_, err = tx.Exec(ctx, "INSERT INTO leasehold_migrations (version, applied_at) VALUES ($1, now())", m.version)
	return current, err == nil, err
}

// SchemaVersion returns the highest migration applied to the database in
// the current schema (0 when search_path finds no leasehold_migrations)
// and the highest one this driver embeds. Tables that search_path finds in
// another schema than the first are refused, as Migrate refuses them, with
// a *SchemaElsewhereError matching ErrSchemaElsewhere: their version is
// not the one a migration would see.
func (d *Driver) SchemaVersion(ctx context.Context) (*driver.SchemaVersion, error) {
	ms, err := loadMigrations()
	if err != nil {
		return nil, err
	}
	v := &driver.SchemaVersion{Known: latestVersion(ms)}
	exists, err := checkTablesSchema(ctx, d.pool)
	var elsewhere *SchemaElsewhereError
	if errors.As(err, &elsewhere) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("pgdriver: schema version: %w", err)
	}
	if !exists {
		return v, nil
	}
	err = d.pool.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM leasehold_migrations").Scan(&v.Database)
	if err != nil {
		return nil, fmt.Errorf("pgdriver: schema version: %w", err)
	}
	return v, nil
}

// latestVersion is the highest version of ms, which are sorted.
func latestVersion(ms []migration) int {
	if len(ms) == 0 {
		return 0
	}
	return ms[len(ms)-1].version
}

// loadMigrations reads the embedded migrations, ordered by version. A file
// is named NNN_description.sql.
func loadMigrations() ([]migration, error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return nil, fmt.Errorf("pgdriver: migrations: %w", err)
	}
	ms := make([]migration, 0, len(names))
	for _, name := range names {
		base := path.Base(name)
		num, _, _ := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if err != nil {
			return nil, fmt.Errorf("pgdriver: migration %s: bad version: %w", base, err)
		}
		b, err := migrationFiles.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("pgdriver: migration %s: %w", base, err)
		}
		ms = append(ms, migration{version: v, name: base, sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i := 1; i < len(ms); i++ {
		if ms[i].version == ms[i-1].version {
			return nil, fmt.Errorf("pgdriver: migrations %s and %s share a version", ms[i-1].name, ms[i].name)
		}
	}
	return ms, nil
}

// retry runs apply until it does not fail for want of a lock
// (lock_not_available), l.Tries times at most, l.Pause apart.
func (l migrationLock) retry(ctx context.Context, apply func() error) error {
	var err error
	for try := 1; ; try++ {
		err = apply()
		var pgErr *pgconn.PgError
		if !errors.As(err, &pgErr) || pgErr.Code != lockNotAvailable {
			return err
		}
		if try >= l.Tries {
			return fmt.Errorf("another transaction held a table's lock through %d tries, each waiting %v "+
				"(see pg_stat_activity for long transactions on leasehold's tables): %w", try, l.Timeout, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (waiting to try again after: %w)", ctx.Err(), err)
		case <-time.After(l.Pause):
		}
	}
}
