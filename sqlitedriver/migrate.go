package sqlitedriver

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"sort"
	"strconv"
	"strings"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

//go:embed migrations/*.sql
var migrationFS embed.FS

// migration is one numbered schema change.
type migration struct {
	version int
	name    string
	sql     string
}

// loadMigrations returns the embedded migrations ordered by version.
func loadMigrations() ([]migration, error) {
	names, err := fs.Glob(migrationFS, "migrations/*.sql")
	if err != nil {
		return nil, fmt.Errorf("sqlitedriver: list migrations: %w", err)
	}
	ms := make([]migration, 0, len(names))
	for _, name := range names {
		base := strings.TrimPrefix(name, "migrations/")
		num, _, ok := strings.Cut(base, "_")
		v, err := strconv.Atoi(num)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("sqlitedriver: bad migration name %q", base)
		}
		b, err := migrationFS.ReadFile(name)
		if err != nil {
			return nil, fmt.Errorf("sqlitedriver: read migration %s: %w", base, err)
		}
		ms = append(ms, migration{version: v, name: base, sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	for i := 1; i < len(ms); i++ {
		if ms[i].version == ms[i-1].version {
			return nil, fmt.Errorf("sqlitedriver: duplicate migration version %d", ms[i].version)
		}
	}
	return ms, nil
}

const createMigrationsTable = `CREATE TABLE IF NOT EXISTS leasehold_migrations (
    version    INTEGER PRIMARY KEY,
    applied_at INTEGER NOT NULL
) STRICT`

// Migrate applies the embedded migrations not yet recorded in
// leasehold_migrations, in order, each in its own BEGIN IMMEDIATE
// transaction, and reports the versions before and after: a second process
// migrating at once waits for the write lock, then sees the version applied
// and skips it. A database with a migration newer than the embedded ones is
// refused before anything is applied, with a *leasehold.SchemaVersionError
// matching leasehold.ErrSchemaTooNew.
func (d *Driver) Migrate(ctx context.Context) (*driver.MigrateResult, error) {
	ms, err := loadMigrations()
	if err != nil {
		return nil, err
	}
	known := latestVersion(ms)
	res := &driver.MigrateResult{}
	for i, m := range ms {
		var (
			current int
			applied bool
		)
		err := d.inTx(ctx, func(ctx context.Context, tx *sql.Tx, now int64) (err error) {
			current, applied, err = applyMigration(ctx, tx, now, m, known)
			return err
		})
		if err != nil {
			return nil, err
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
func applyMigration(ctx context.Context, tx *sql.Tx, now int64, m migration, known int) (int, bool, error) {
	if _, err := tx.ExecContext(ctx, createMigrationsTable); err != nil {
		return 0, false, fmt.Errorf("sqlitedriver: create leasehold_migrations: %w", err)
	}
	var current, done int
	err := tx.QueryRowContext(ctx, `SELECT coalesce(max(version), 0), coalesce(max(version = ?), 0)
		FROM leasehold_migrations`, m.version).Scan(&current, &done)
	if err != nil {
		return 0, false, fmt.Errorf("sqlitedriver: read leasehold_migrations: %w", err)
	}
	if current > known {
		return current, false, &leasehold.SchemaVersionError{Database: current, Known: known}
	}
	if done > 0 {
		return current, false, nil
	}
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return current, false, fmt.Errorf("sqlitedriver: migration %s: %w", m.name, err)
	}
	_, err = tx.ExecContext(ctx,
		`INSERT INTO leasehold_migrations (version, applied_at) VALUES (?, ?)`, m.version, now)
	if err != nil {
		return current, false, fmt.Errorf("sqlitedriver: record migration %s: %w", m.name, err)
	}
	return current, true, nil
}

// SchemaVersion returns the highest migration applied to the database (0
// when leasehold_migrations does not exist) and the highest one this
// driver embeds.
func (d *Driver) SchemaVersion(ctx context.Context) (*driver.SchemaVersion, error) {
	ms, err := loadMigrations()
	if err != nil {
		return nil, err
	}
	v := &driver.SchemaVersion{Known: latestVersion(ms)}
	if err := d.file.check(); err != nil {
		return nil, fmt.Errorf("sqlitedriver: schema version: %w", err)
	}
	var tables int
	err = d.db.QueryRowContext(ctx,
		`SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name = 'leasehold_migrations'`).Scan(&tables)
	if err != nil {
		return nil, fmt.Errorf("sqlitedriver: schema version: %w", d.wrapErr(err))
	}
	if tables == 0 {
		return v, nil
	}
	err = d.db.QueryRowContext(ctx, `SELECT coalesce(max(version), 0) FROM leasehold_migrations`).Scan(&v.Database)
	if err != nil {
		return nil, fmt.Errorf("sqlitedriver: schema version: %w", d.wrapErr(err))
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
