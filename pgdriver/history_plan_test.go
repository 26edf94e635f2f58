package pgdriver

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"

	leasehold "github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// TestEndAttemptsProbesOnce checks that ending a batch of attempts looks
// for open history rows (left by claims from before migration 008) once
// per statement, not once per attempt: beside 20,000 ended history rows
// and none open, the finish of 1,000 leases must not look up
// leasehold_attempts for its attempts at all, and with one row open it
// does (the upgrade tests, CheckHistoryAfterUpgrade, check that it ends
// that row).
func TestEndAttemptsProbesOnce(t *testing.T) {
	d, _ := newTestDriver(t)
	ctx := testCtx(t)
	const leased = 1000
	insertBulk(t, d, "q", leased)
	jobs := claimN(t, d, "q", "w", leaseTTL, leased)
	ended := `INSERT INTO leasehold_attempts (job_id, attempt, owner, claimed_at, ended_at, outcome)
		SELECT g, 1, 'w', now(), now(), 'completed' FROM generate_series(1000001, 1020000) AS g`
	for _, q := range []string{ended, "ANALYZE leasehold_jobs, leasehold_attempts"} {
		if _, err := d.pool.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	ids, leases := leaseSet(leased, func(i int) driver.LeaseRef {
		return driver.LeaseRef{ID: jobs[i].ID, Attempt: jobs[i].Attempt}
	})
	args := append([]any{ids, leases, "w"}, uniformArgs(transition(leasehold.OutcomeCompleted, ""))...)

	plan := explainAnalyze(t, d, "", finishUniformSQL, args...)
	if probes := attemptProbes(plan); probes != 0 {
		t.Errorf("finish with no open history row: leasehold_attempts scanned for its attempts %d times, want 0; plan:\n%s", probes, plan)
	}
	if !strings.Contains(plan, "Insert on leasehold_attempts") || !regexp.MustCompile(`Update on leasehold_jobs j \(actual rows=1000 `).MatchString(plan) {
		t.Errorf("finish: want 1,000 jobs updated and their history inserted; plan:\n%s", plan)
	}

	open := fmt.Sprintf(`INSERT INTO leasehold_attempts (job_id, attempt, owner, claimed_at)
		VALUES (%d, %d, 'w', now())`, jobs[0].ID, jobs[0].Attempt)
	plan = explainAnalyze(t, d, open, finishUniformSQL, args...)
	if probes := attemptProbes(plan); probes == 0 {
		t.Errorf("finish with an open history row: want it looked for, got plan:\n%s", plan)
	}
}

// attemptProbes returns how many times the plan's scans of
// leasehold_attempts for the attempts a statement ends (alias a) ran, in
// all: 0 when none ran.
func attemptProbes(plan string) int {
	n := 0
	re := regexp.MustCompile(`Scan\b.* on leasehold_attempts a \(actual rows=\d+ loops=(\d+)\)`)
	for _, m := range re.FindAllStringSubmatch(plan, -1) {
		loops, _ := strconv.Atoi(m[1])
		n += loops
	}
	return n
}

// explainAnalyze runs sql with args under EXPLAIN ANALYZE, after setup if
// it is not empty, in a transaction it rolls back, and returns the plan
// with the rows and loops of each node.
func explainAnalyze(t *testing.T, d *Driver, setup, sql string, args ...any) string {
	t.Helper()
	ctx := testCtx(t)
	tx, err := d.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if setup != "" {
		if _, err := tx.Exec(ctx, setup); err != nil {
			t.Fatalf("setup: %v", err)
		}
	}
	rows, err := tx.Query(ctx, "EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) "+sql, args...)
	return readPlan(t, rows, err)
}
