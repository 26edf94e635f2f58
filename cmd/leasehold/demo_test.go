package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/demo"
	"github.com/leasehold/leasehold/internal/testdb"
)

// TestDemo runs the demo end to end: without flags on the default SQLite
// file, and with --json on PostgreSQL.
func TestDemo(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		r := runIn(t, dir, nil, "demo", "--payments", "8")
		if r.code != 0 {
			t.Fatalf("demo: %s", r)
		}
		for _, want := range []string{"sqlite:" + demo.DefaultPath, "SIGKILL w", "jobs rescued",
			"late completions refused", "charges recorded", "OK: 8 payments, 8 charges, 8 ledger rows"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("demo output lacks %q:\n%s", want, r.stdout)
			}
		}
		if _, err := os.Stat(filepath.Join(dir, demo.DefaultPath)); err != nil {
			t.Errorf("demo database file: %v", err)
		}
		if r := runIn(t, dir, nil, "--db", demo.DefaultPath, "queues"); r.code != 0 || !strings.Contains(r.stdout, "demo-") {
			t.Errorf("queues on the demo database: %s", r)
		}
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		db := testdb.PostgresURL(t)
		r := runIn(t, "", nil, "--db", db, "--json", "demo", "--payments", "8")
		if r.code != 0 {
			t.Fatalf("demo: %s", r)
		}
		var s demo.Summary
		if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
			t.Fatalf("demo --json: %v\n%s", err, r)
		}
		if !s.OK || s.Completed != 8 || s.Charges != 8 || s.LedgerRows != 8 || s.Killed == "" || s.Rescued < 1 ||
			s.Attempts <= s.Payments {
			t.Errorf("demo summary = %+v\nstderr:\n%s", s, r.stderr)
		}
		if !strings.Contains(r.stderr, "SIGKILL") {
			t.Errorf("demo --json story on stderr lacks the SIGKILL:\n%s", r.stderr)
		}
	})
}
