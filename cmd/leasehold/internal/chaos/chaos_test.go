package chaos_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/chaos"
	"github.com/leasehold/leasehold/internal/testdb"
)

// smallRun are the flags of the CI runs: a few thousand jobs, a kill every
// 700ms, a freeze every 3s (longer than the 2s lease), 3 workers. The
// provider's latency caps the pace (3 x 8 jobs per 60ms), so that even a
// fast machine sees several kills and a freeze before the jobs drain.
func smallRun(jobs string) []string {
	return []string{"--jobs", jobs, "--workers", "3", "--concurrency", "8", "--latency", "60ms",
		"--kill-every", "700ms", "--freeze-every", "3s", "--freeze-for", "2.5s", "--timeout", "90s"}
}

// TestChaos runs the harness for real on both databases and requires every
// invariant to hold, with several kills, at least one freeze and, on
// PostgreSQL, a database restart and terminated sessions.
func TestChaos(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		db := "sqlite:" + filepath.Join(t.TempDir(), "chaos.db")
		args := append([]string{"--db", db, "--worker-exe", binary(t, "")}, smallRun("2000")...)
		rep := mustPass(t, runChaos(t, binary(t, "orchestrator"), args...))
		checkFaults(t, rep, 0)
	})
	t.Run("postgres", func(t *testing.T) {
		c := testdb.StartCluster(t) // restarted below: never the shared server
		args := append([]string{"--db", c.URL, "--worker-exe", binary(t, ""), "--pg-restarts", "1",
			"--pg-terminate-every", "1500ms", "--pgdata", c.DataDir, "--pg-ctl", c.PGCtl, "--pg-log", c.LogFile},
			smallRun("2000")...)
		rep := mustPass(t, runChaos(t, binary(t, "orchestrator"), args...))
		checkFaults(t, rep, 1)
		terminations := 0
		for _, o := range rep.Faults.Outages {
			if o.Kind == "pg_terminate" {
				terminations++
			}
		}
		if terminations == 0 {
			t.Error("no pg_terminate_backend was injected")
		}
	})
}

// checkFaults requires the faults a small run must inject, and figures
// that show the checks had something to check.
func checkFaults(t *testing.T, rep *chaos.Report, restarts int) {
	t.Helper()
	f := rep.Faults
	freezes := 0
	for _, fr := range f.Freezes {
		if !fr.HeldWriteLock {
			freezes++
		}
	}
	n := 0
	for _, o := range f.Outages {
		if o.Kind == "pg_restart" {
			n++
			if o.Workers == 0 || o.Recovered != o.Workers || o.Errors == 0 {
				t.Errorf("restart: %d of %d workers recovered after %d errors; want all, after some errors", o.Recovered, o.Workers, o.Errors)
			}
		}
	}
	switch {
	case len(f.Kills) < 3:
		t.Errorf("%d kills, want several", len(f.Kills))
	case freezes < 1:
		t.Errorf("no freeze")
	case n != restarts:
		t.Errorf("%d database restarts, want %d", n, restarts)
	case rep.Jobs.Completed != rep.Jobs.Inserted || rep.Effects.Rows != rep.Jobs.Inserted:
		t.Errorf("%d jobs completed, %d ledger rows, for %d jobs", rep.Jobs.Completed, rep.Effects.Rows, rep.Jobs.Inserted)
	case rep.Refusals.Completions == 0:
		t.Errorf("no refused completion after %d freezes", freezes)
	case rep.Reconcile.Jobs == 0:
		t.Errorf("no lease expired in the reconciling queue %s: reconciliation went unexercised", chaos.ReconcileQueue)
	case rep.Reclaim.Orphans == 0 || rep.Leases.Expired == 0:
		t.Errorf("nothing to check: %d orphaned leases, %d expired leases", rep.Reclaim.Orphans, rep.Leases.Expired)
	}
}

// TestChaosUnfencedPostgres proves the checks do not pass vacuously: the
// chaos_unfenced build completes jobs without the fence whenever the
// fence refuses them, and the harness must fail, naming the broken
// invariants (duplicate ledger effects, and no refused completion).
func TestChaosUnfencedPostgres(t *testing.T) {
	c := testdb.StartCluster(t)
	bin := binary(t, "unfenced")
	args := []string{"--db", c.URL, "--jobs", "2000", "--workers", "3", "--latency", "40ms", "--ttl", "1s",
		"--kill-every", "700ms", "--freeze-every", "2s", "--freeze-for", "1.6s", "--timeout", "90s"}
	r := runChaos(t, bin, args...)
	if r.code != 1 || r.report == nil {
		t.Fatalf("unfenced run: want exit 1 with a report, got %s", r)
	}
	rep := r.report
	if !rep.Unfenced {
		t.Error("the report does not say the build is unfenced")
	}
	failed := strings.Join(rep.Failed(), " ")
	for _, name := range []string{"one-effect-per-job", "refusals-seen"} {
		if !strings.Contains(failed, name) || !strings.Contains(r.stderr, name) {
			t.Errorf("invariant %s did not fail (failed: %s)\nstderr tail: %s", name, failed, tail(r.stderr))
		}
	}
	if rep.Effects.Duplicated == 0 || rep.Refusals.Completions != 0 {
		t.Errorf("unfenced run: %d jobs with duplicate effects, %d refused completions; want some, and none",
			rep.Effects.Duplicated, rep.Refusals.Completions)
	}
}

func tail(s string) string {
	if len(s) > 2000 {
		return s[len(s)-2000:]
	}
	return s
}
