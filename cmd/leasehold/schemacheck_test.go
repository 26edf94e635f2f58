package main

import (
	"os"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/internal/testdb"
)

// TestOperatorCommandsCheckTheSchema: operator commands refuse, with exit
// code 1 and what to run, a database whose leasehold schema is not the
// version the tool knows, before they read or write it: one never
// migrated (a typo in --db, a search_path naming another schema), one
// behind (run migrate), one a newer leasehold migrated (whose rows this
// tool could write wrongly). Nothing is enqueued in any of them.
func TestOperatorCommandsCheckTheSchema(t *testing.T) {
	commands := [][]string{
		{"jobs", "list"},
		{"enqueue", "leasehold.sleep"},
		{"queues"},
		{"watch", "--once"},
	}
	check := func(t *testing.T, db, want string) {
		t.Helper()
		for _, args := range commands {
			r := lh(t, db, args...)
			if r.code != 1 || !strings.Contains(r.stderr, want) {
				t.Errorf("leasehold %s: exit %d, stderr %q; want exit 1 and %q", strings.Join(args, " "), r.code, r.stderr, want)
			}
		}
	}
	t.Run("never migrated", func(t *testing.T) {
		path := testdb.SQLitePath(t)
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		check(t, "sqlite:"+path, "has no leasehold tables: run `leasehold migrate`")
		if fi, err := os.Stat(path); err != nil || fi.Size() != 0 {
			t.Errorf("the empty file after the refusals: %v, %v; want it left empty", fi, err)
		}
		check(t, testdb.PostgresURL(t), "check --db (on PostgreSQL, the URL's search_path)")
	})
	forEachDB(t, func(t *testing.T, db string) {
		h := openDB(t, db)
		sqlDB, err := h.SQL()
		if err != nil {
			t.Fatal(err)
		}
		exec := func(q string) {
			t.Helper()
			if _, err := sqlDB.ExecContext(t.Context(), q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
		record := func(version string) {
			t.Helper()
			if strings.HasPrefix(db, "sqlite:") {
				exec(`INSERT INTO leasehold_migrations (version, applied_at) VALUES (` + version + `, 0)`)
			} else {
				exec(`INSERT INTO leasehold_migrations (version) VALUES (` + version + `)`)
			}
		}
		var latest string
		if err := sqlDB.QueryRowContext(t.Context(), `SELECT max(version) FROM leasehold_migrations`).Scan(&latest); err != nil {
			t.Fatal(err)
		}
		exec(`DELETE FROM leasehold_migrations WHERE version = ` + latest)
		check(t, db, "and this leasehold needs")
		record(latest) // as migrate would once the change is made (not made again here: SQLite cannot add a column twice)
		ok(t, db, "queues")
		record("999")
		check(t, db, "was migrated by a newer leasehold (schema version 999")
		var jobs int
		if err := sqlDB.QueryRowContext(t.Context(), `SELECT count(*) FROM leasehold_jobs`).Scan(&jobs); err != nil {
			t.Fatal(err)
		}
		if jobs != 0 {
			t.Errorf("%d jobs enqueued in a database the tool refused", jobs)
		}
	})
}

// TestWorkSaysItCreatedTheTables: `leasehold work` migrates the database
// itself; when that created the tables (none were there, so no job was
// waiting), it warns and names the places to check, since a worker
// pointed at the wrong database or schema would otherwise wait on an
// empty queue without a word. On a database that had them it says
// nothing of the sort.
func TestWorkSaysItCreatedTheTables(t *testing.T) {
	db := "sqlite:" + testdb.SQLitePath(t)
	const warning = "created the leasehold tables: this database had none"
	for i, want := range []bool{true, false} {
		r := lh(t, db, "work", "--kind", "leasehold.sleep", "--until-idle", "--poll-interval", "50ms", "--log-level", "warn")
		if r.code != 0 {
			t.Fatalf("run %d: %s", i+1, r)
		}
		if got := strings.Contains(r.stderr, warning); got != want {
			t.Errorf("run %d: warned %v, want %v; stderr:\n%s", i+1, got, want, r.stderr)
		}
	}
}
