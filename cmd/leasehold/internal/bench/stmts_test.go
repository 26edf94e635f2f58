package bench

import (
	"context"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// TestHarnessReadsLeftOutOfStatements reads the WAL position and the
// dead row count around a "drain" (one statement standing for it) in a
// database of its own, and checks that the statement count holds that
// statement and none of those reads, as scripts/peerbench's count leaves
// out its own. It does not reset pg_stat_statements (the server may be
// shared): a new database has no entries of its own yet.
func TestHarnessReadsLeftOutOfStatements(t *testing.T) {
	base := os.Getenv("LEASEHOLD_TEST_DATABASE_URL")
	if base == "" {
		t.Skip("LEASEHOLD_TEST_DATABASE_URL is not set")
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dbURL := freshDatabase(ctx, t, base)
	st, err := openStatementsNoReset(ctx, dbURL)
	if err != nil {
		// scripts/test's own server loads the module and says so: there,
		// a refusal is a failure, not a reason to skip.
		if os.Getenv("LEASEHOLD_TEST_STATEMENTS") == "1" {
			t.Fatalf("pg_stat_statements: %v, but LEASEHOLD_TEST_STATEMENTS=1", err)
		}
		t.Skipf("skipping: %v", err)
	}
	defer st.close()
	b := &bench{opts: Options{URL: dbURL}.withDefaults(), rep: &Report{}}
	s, err := b.newScratch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	mark, err := s.markRows(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.pool.Exec(ctx, "SELECT count(*) FROM leasehold_jobs"); err != nil {
		t.Fatal(err)
	}
	total, top, err := st.read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.rowCost(ctx, mark, 1); err != nil {
		t.Fatal(err)
	}
	drained := false
	for _, q := range top {
		if strings.Contains(q.Query, "pg_current_wal_lsn") || strings.Contains(q.Query, "pg_stat_user_tables") {
			t.Errorf("the bench's own read is counted: %d call(s): %s", q.Calls, q.Query)
		}
		drained = drained || strings.Contains(q.Query, "SELECT count(*) FROM leasehold_jobs")
	}
	if !drained || total < 1 {
		t.Errorf("%d statements %v: want the drain's statement counted", total, top)
	}
}

// freshDatabase creates a database of its own on the server of base,
// dropped at the test's end, and returns its URL.
func freshDatabase(ctx context.Context, t *testing.T, base string) string {
	t.Helper()
	suffix, err := randomHex()
	if err != nil {
		t.Fatal(err)
	}
	name := "leasehold_bench_test_" + suffix
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		_ = admin.Close(ctx)
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_, _ = admin.Exec(context.Background(), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
		_ = admin.Close(context.Background())
	})
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	u.Path = "/" + name
	return u.String()
}

// openStatementsNoReset is openPgStats without its reset: the reset is
// the whole server's.
func openStatementsNoReset(ctx context.Context, dbURL string) (*pgStats, error) {
	conn, err := pgx.Connect(ctx, dbURL)
	if err != nil {
		return nil, err
	}
	s := &pgStats{conn: conn}
	if _, err := conn.Exec(ctx, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements"); err != nil {
		s.close()
		return nil, err
	}
	if _, _, err := s.read(ctx); err != nil {
		s.close()
		return nil, err
	}
	return s, nil
}
