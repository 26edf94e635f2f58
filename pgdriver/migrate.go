package pgdriver

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"
)

//go:embed migrations/*.sql
var migrationFiles embed.FS

// migration is one embedded, numbered schema change.
type migration struct {
	version int
	name    string
	sql     string
}

// migrateLockKey namespaces the advisory lock that serialises migrations;
// the second key is a hash of the current schema, so separate schemas of one
// database migrate independently.
const migrateLockKey = 0x1ea5e

const createMigrationsTable = `CREATE TABLE IF NOT EXISTS leasehold_migrations (
	version    integer PRIMARY KEY,
	applied_at timestamptz NOT NULL DEFAULT now()
)`

// Migrate applies the embedded migrations that are not applied yet, in
// order, each in its own transaction under pg_advisory_xact_lock. It is
// idempotent and safe when several processes run it at once.
func (d *Driver) Migrate(ctx context.Context) error {
	ms, err := loadMigrations()
	if err != nil {
		return err
	}
	for _, m := range ms {
		if err := pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error { return applyMigration(ctx, tx, m) }); err != nil {
			return fmt.Errorf("pgdriver: migrate %s: %w", m.name, err)
		}
	}
	return nil
}

func applyMigration(ctx context.Context, tx pgx.Tx, m migration) error {
	lock := "SELECT pg_advisory_xact_lock($1, hashtext(coalesce(current_schema(), '')))"
	if _, err := tx.Exec(ctx, lock, int32(migrateLockKey)); err != nil {
		return err
	}
	if _, err := tx.Exec(ctx, createMigrationsTable); err != nil {
		return err
	}
	var applied bool
	err := tx.QueryRow(ctx, "SELECT EXISTS (SELECT 1 FROM leasehold_migrations WHERE version = $1)", m.version).Scan(&applied)
	if err != nil || applied {
		return err
	}
	if _, err := tx.Exec(ctx, m.sql); err != nil {
		return err
	}
	_, err = tx.Exec(ctx, "INSERT INTO leasehold_migrations (version, applied_at) VALUES ($1, now())", m.version)
	return err
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
