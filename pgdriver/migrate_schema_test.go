package pgdriver

import (
	"context"
	"errors"
	neturl "net/url"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/leasehold/leasehold/internal/testdb"
)

// withSearchPath returns url with its search_path set to path.
func withSearchPath(t *testing.T, url, path string) string {
	t.Helper()
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	q := u.Query()
	q.Set("search_path", path)
	u.RawQuery = q.Encode()
	return u.String()
}

// searchPathOf is the search_path of a testdb URL: its fresh schema.
func searchPathOf(t *testing.T, url string) string {
	t.Helper()
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	return u.Query().Get("search_path")
}

// openURL opens a driver on url, closed when the test ends.
func openURL(t *testing.T, ctx context.Context, url string) *Driver {
	t.Helper()
	d, err := Open(ctx, url)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// countInt runs a query returning one integer.
func countInt(t *testing.T, ctx context.Context, d *Driver, sql string) int {
	t.Helper()
	var n int
	if err := d.pool.QueryRow(ctx, sql).Scan(&n); err != nil {
		t.Fatalf("%s: %v", sql, err)
	}
	return n
}

// tablesIn counts the leasehold tables in schema.
func tablesIn(t *testing.T, ctx context.Context, d *Driver, schema string) int {
	t.Helper()
	var n int
	err := d.pool.QueryRow(ctx, `SELECT count(*) FROM information_schema.tables
		WHERE table_schema = $1 AND table_name LIKE 'leasehold%'`, schema).Scan(&n)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// migratedBehind migrates a fresh schema A, inserts one job and sets the
// recorded version back to 14 (migration 15 only adds a column if it is
// missing, so applying it again is harmless), as an older release left
// it; it returns a driver on A, A's name and a URL whose search_path puts
// a second existing schema, B, before A.
func migratedBehind(t *testing.T, ctx context.Context) (dA *Driver, a, b, urlBA string) {
	t.Helper()
	urlA, urlB := testdb.PostgresURL(t), testdb.PostgresURL(t)
	a, b = searchPathOf(t, urlA), searchPathOf(t, urlB)
	dA = openURL(t, ctx, urlA)
	if _, err := dA.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	insertJobs(t, dA, "q", 1)
	if _, err := dA.pool.Exec(ctx, "DELETE FROM leasehold_migrations WHERE version > 14"); err != nil {
		t.Fatal(err)
	}
	return dA, a, b, withSearchPath(t, urlA, b+","+a)
}

// TestMigrateRefusesTablesBehindAnotherSchema: leasehold was migrated
// into schema A, and a schema B later came to exist before A on the
// search_path (as CREATE SCHEMA AUTHORIZATION does with the default
// "$user", public). Migrating would create a second, empty set of tables
// in B, which every later connection would use instead of A's jobs; so
// SchemaVersion and Migrate refuse, naming both schemas, and nothing is
// created in B.
func TestMigrateRefusesTablesBehindAnotherSchema(t *testing.T) {
	ctx := testCtx(t)
	dA, a, b, urlBA := migratedBehind(t, ctx)
	dBA := openURL(t, ctx, urlBA)

	if _, err := dBA.SchemaVersion(ctx); !errors.Is(err, ErrSchemaElsewhere) {
		t.Errorf("SchemaVersion with search_path %s,%s: err = %v, want ErrSchemaElsewhere", b, a, err)
	}
	res, err := dBA.Migrate(ctx)
	var elsewhere *SchemaElsewhereError
	if !errors.As(err, &elsewhere) || !errors.Is(err, ErrSchemaElsewhere) {
		t.Errorf("Migrate with search_path %s,%s: result %+v, err = %v, want a *SchemaElsewhereError", b, a, res, err)
	} else if elsewhere.Tables != a || elsewhere.Current != b {
		t.Errorf("error names tables in %q and current schema %q, want %q and %q", elsewhere.Tables, elsewhere.Current, a, b)
	}
	if n := tablesIn(t, ctx, dA, b); n != 0 {
		t.Errorf("%d leasehold tables created in %s", n, b)
	}
	if v := countInt(t, ctx, dA, "SELECT max(version) FROM leasehold_migrations"); v != 14 {
		t.Errorf("version in %s = %d, want 14 (untouched)", a, v)
	}
	// A process started afterwards, with the same search_path, still
	// sees the job.
	dNew := openURL(t, ctx, urlBA)
	if n := countInt(t, ctx, dNew, "SELECT count(*) FROM leasehold_jobs"); n != 1 {
		t.Errorf("a process started after Migrate sees %d jobs, want 1", n)
	}
}

// TestApplyMigrationRechecksSchemaUnderLock: a migration's transaction
// checks where the tables are after it takes the lock, since another
// process may create them between Migrate's first look and then.
func TestApplyMigrationRechecksSchemaUnderLock(t *testing.T) {
	ctx := testCtx(t)
	dA, _, b, urlBA := migratedBehind(t, ctx)
	dBA := openURL(t, ctx, urlBA)
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	err = pgx.BeginFunc(ctx, dBA.pool, func(tx pgx.Tx) error {
		_, _, err := applyMigration(ctx, tx, ms[0], latestVersion(ms), 0)
		return err
	})
	if !errors.Is(err, ErrSchemaElsewhere) {
		t.Errorf("applyMigration: err = %v, want ErrSchemaElsewhere", err)
	}
	if n := tablesIn(t, ctx, dA, b); n != 0 {
		t.Errorf("%d leasehold tables created in %s", n, b)
	}
}

// TestMigrateOneSchema: the cases with one place for the tables still
// migrate: a fresh schema behind another (the tables go to the first), a
// schema behind on its own, one listed after a schema that does not exist
// (the default "$user", public without a $user schema), and one up to
// date.
func TestMigrateOneSchema(t *testing.T) {
	ctx := testCtx(t)
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	known := latestVersion(ms)
	after14 := 0 // the migrations migratedBehind leaves to apply
	for _, m := range ms {
		if m.version > 14 {
			after14++
		}
	}

	t.Run("fresh", func(t *testing.T) {
		urlA, urlB := testdb.PostgresURL(t), testdb.PostgresURL(t)
		a, b := searchPathOf(t, urlA), searchPathOf(t, urlB)
		d := openURL(t, ctx, withSearchPath(t, urlA, b+","+a))
		res, err := d.Migrate(ctx)
		if err != nil || res.From != 0 || res.To != known || res.Applied != len(ms) {
			t.Fatalf("Migrate: %+v, %v", res, err)
		}
		if tablesIn(t, ctx, d, b) == 0 || tablesIn(t, ctx, d, a) != 0 {
			t.Fatalf("tables not created in the first schema, %s, only", b)
		}
		if v, err := d.SchemaVersion(ctx); err != nil || v.Database != known {
			t.Fatalf("SchemaVersion: %+v, %v", v, err)
		}
	})

	for _, tc := range []struct{ name, before string }{
		{"behind", ""},
		{"behind after a missing schema", "lh_test_missing_schema,"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dA, a, _, urlBA := migratedBehind(t, ctx)
			path := tc.before + a
			d := openURL(t, ctx, withSearchPath(t, urlBA, path))
			res, err := d.Migrate(ctx)
			if err != nil || res.From != 14 || res.To != known || res.Applied != after14 {
				t.Fatalf("Migrate with search_path %s: %+v, %v", path, res, err)
			}
			if n := countInt(t, ctx, dA, "SELECT count(*) FROM leasehold_jobs"); n != 1 {
				t.Fatalf("%d jobs after Migrate, want 1", n)
			}
			res, err = d.Migrate(ctx)
			if err != nil || res.From != known || res.To != known || res.Applied != 0 {
				t.Fatalf("Migrate up to date: %+v, %v", res, err)
			}
		})
	}
}
