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
// transaction: a second process migrating at once waits for the write lock,
// then sees the version applied and skips it.
func (d *Driver) Migrate(ctx context.Context) error {
	ms, err := loadMigrations()
	if err != nil {
		return err
	}
	for _, m := range ms {
		err := d.inTx(ctx, func(ctx context.Context, tx *sql.Tx, now int64) error {
			return applyMigration(ctx, tx, now, m)
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// applyMigration applies m in tx unless it is already recorded.
func applyMigration(ctx context.Context, tx *sql.Tx, now int64, m migration) error {
	if _, err := tx.ExecContext(ctx, createMigrationsTable); err != nil {
		return fmt.Errorf("sqlitedriver: create leasehold_migrations: %w", err)
	}
	var n int
	err := tx.QueryRowContext(ctx,
		`SELECT count(*) FROM leasehold_migrations WHERE version = ?`, m.version).Scan(&n)
	if err != nil {
		return fmt.Errorf("sqlitedriver: read leasehold_migrations: %w", err)
	}
	if n > 0 {
		return nil
	}
	if _, err := tx.ExecContext(ctx, m.sql); err != nil {
		return fmt.Errorf("sqlitedriver: migration %s: %w", m.name, err)
	}
	_, err = tx.ExecContext(ctx,
		`INSERT INTO leasehold_migrations (version, applied_at) VALUES (?, ?)`, m.version, now)
	if err != nil {
		return fmt.Errorf("sqlitedriver: record migration %s: %w", m.name, err)
	}
	return nil
}
