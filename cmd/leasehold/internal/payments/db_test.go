package payments

import (
	"context"
	"database/sql"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/testdb"
	"github.com/leasehold/leasehold/pgdriver"
	"github.com/leasehold/leasehold/sqlitedriver"
)

// testDB is a fresh database for a test: a client configuration with its
// driver, and the ledger.
type testDB struct {
	cfg    leasehold.Config
	ledger *Ledger
}

// openTestDB opens a fresh database of each kind.
var openTestDB = map[string]func(t *testing.T) testDB{
	"sqlite": func(t *testing.T) testDB {
		d, err := sqlitedriver.Open(testdb.SQLitePath(t))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = d.Close() })
		l, err := NewLedger(d.DB(), SQLite)
		if err != nil {
			t.Fatal(err)
		}
		return testDB{cfg: leasehold.Config{Driver: d}, ledger: l}
	},
	"postgres": func(t *testing.T) testDB {
		url := testdb.PostgresURL(t)
		d, err := pgdriver.Open(context.Background(), url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = d.Close() })
		db, err := sql.Open("pgx", url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		l, err := NewLedger(db, Postgres)
		if err != nil {
			t.Fatal(err)
		}
		return testDB{cfg: leasehold.Config{Driver: d}, ledger: l}
	},
}
