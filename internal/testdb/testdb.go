// Package testdb gives tests an isolated, real database: a fresh PostgreSQL
// schema on the server named by LEASEHOLD_TEST_DATABASE_URL, or a fresh
// SQLite file in a temporary directory.
package testdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// EnvURL names the variable holding the PostgreSQL server URL for tests.
const EnvURL = "LEASEHOLD_TEST_DATABASE_URL"

// EnvRequire, when set to 1, makes PostgreSQL tests fail instead of skip
// when EnvURL is unset, so a CI run cannot pass without them.
const EnvRequire = "LEASEHOLD_REQUIRE_POSTGRES"

// PostgresURL returns a URL whose connections use a new, empty schema
// (through search_path), dropped when the test ends. It skips the test when
// no server is configured, or fails it when EnvRequire is 1.
func PostgresURL(t testing.TB) string {
	t.Helper()
	base := os.Getenv(EnvURL)
	if base == "" {
		if os.Getenv(EnvRequire) == "1" {
			t.Fatalf("%s is not set but %s=1: PostgreSQL tests must run", EnvURL, EnvRequire)
		}
		t.Skipf("%s not set: skipping PostgreSQL test", EnvURL)
	}
	schema := "lh_test_" + randomSuffix(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("testdb: connect %s: %v", EnvURL, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("testdb: create schema: %v", err)
	}
	t.Cleanup(func() { dropSchema(t, base, schema) })
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("testdb: parse %s: %v", EnvURL, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

func dropSchema(t testing.TB, base, schema string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Logf("testdb: drop schema %s: %v", schema, err)
		return
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
		t.Logf("testdb: drop schema %s: %v", schema, err)
	}
}

// SQLitePath returns the path of a new SQLite database file in a temporary
// directory removed when the test ends.
func SQLitePath(t testing.TB) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "leasehold.db")
}

func randomSuffix(t testing.TB) string {
	var b [6]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatalf("testdb: random: %v", err)
	}
	return hex.EncodeToString(b[:])
}
