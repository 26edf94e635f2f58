package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
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
			"late writes refused", "charges recorded", "OK: 8 payments, 8 charges, 8 ledger rows"} {
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

// TestDemoReconcile runs the reconciliation story end to end: on the
// default SQLite file, and with --json on PostgreSQL. Workers are killed
// right after a charge and webhooks are lost; every such payment must be
// healed, none charged twice, one ledger row per charge.
func TestDemoReconcile(t *testing.T) {
	check := func(t *testing.T, s demo.ReconcileSummary, out string) {
		t.Helper()
		if !s.OK || s.Completed != s.Payments || s.LedgerRows != int64(s.Payments) || s.Charges != s.Payments ||
			s.ChargedTwice != 0 || s.WebhooksLost == 0 || s.HealedByScan == 0 || s.HealedByReconciler == 0 ||
			s.Healed != s.ChargedWhilePending || len(s.Killed) == 0 {
			t.Errorf("demo reconcile summary = %+v\n%s", s, out)
		}
	}
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		r := runIn(t, dir, nil, "--json", "demo", "reconcile", "--payments", "24")
		if r.code != 0 {
			t.Fatalf("demo reconcile: %s", r)
		}
		var s demo.ReconcileSummary
		if err := json.Unmarshal([]byte(r.stdout), &s); err != nil {
			t.Fatalf("demo reconcile --json: %v\n%s", err, r)
		}
		check(t, s, r.stderr)
		for _, want := range []string{"SIGKILL w", "reconciling", "scan: ", "heal job"} {
			if !strings.Contains(r.stderr, want) {
				t.Errorf("demo reconcile story lacks %q:\n%s", want, r.stderr)
			}
		}
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		r := runIn(t, "", nil, "--db", testdb.PostgresURL(t), "demo", "reconcile", "--payments", "24")
		if r.code != 0 {
			t.Fatalf("demo reconcile: %s", r)
		}
		for _, want := range []string{"charged while pending", "healed", "charged twice            0", "OK: 24 payments, 24 charges, 24 ledger rows"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("demo reconcile output lacks %q:\n%s", want, r.stdout)
			}
		}
	})
}

// TestDemoWorkersRange checks the fewest workers each story accepts: the
// demo kills one and freezes another, so it needs a third to take their
// leases over, and refuses fewer before it starts anything.
func TestDemoWorkersRange(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"demo", "--workers", "2", "--payments", "4"}, "--workers 2 is out of range 3..16: the story kills one worker and freezes another"},
		{[]string{"demo", "--workers", "17"}, "--workers 17 is out of range 3..16"},
		{[]string{"demo", "reconcile", "--workers", "1"}, "--workers 1 is out of range 2..16"},
	}
	for _, c := range cases {
		dir := t.TempDir()
		r := runIn(t, dir, nil, c.args...)
		if r.code != cli.ExitUsage || !strings.Contains(r.stderr, c.want) {
			t.Errorf("leasehold %s: want exit %d and %q: %s", strings.Join(c.args, " "), cli.ExitUsage, c.want, r)
		}
		if _, err := os.Stat(filepath.Join(dir, demo.DefaultPath)); err == nil {
			t.Errorf("leasehold %s created the demo database", strings.Join(c.args, " "))
		}
	}
	r := runIn(t, "", nil, "demo", "--help")
	if !strings.Contains(r.stdout, "worker processes (3 to 16)") {
		t.Errorf("demo --help lacks the workers' range:\n%s", r.stdout)
	}
}
