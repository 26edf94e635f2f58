package sqlitedriver

import (
	"strings"
	"testing"
	"time"
)

// claimPlanArgs are the arguments of a claim of up to limit jobs of queue
// q, kind k, by owner w at now.
func claimPlanArgs(now int64, limit int) []any {
	return []any{now, int64(1e6), "w", "q", `["k"]`, limit}
}

// TestClaimPlanChecksPauseOnce checks that the claim statements look up
// the paused-queue check once per statement, through leasehold_queues'
// primary key (an uncorrelated scalar subquery), and still take their
// ready jobs from leasehold_jobs_ready.
func TestClaimPlanChecksPauseOnce(t *testing.T) {
	d := openTest(t)
	for name, query := range map[string]string{"pending": claimSQLPending, "takeover": claimSQLTakeOver} {
		plan := queryPlan(t, d, query, claimPlanArgs(0, 10)...)
		if strings.Contains(plan, "CORRELATED") || !strings.Contains(plan, "SEARCH leasehold_queues USING PRIMARY KEY") ||
			!strings.Contains(plan, "USING INDEX leasehold_jobs_ready") {
			t.Errorf("%s claim: want a one-time primary-key lookup of the pause and the ready index, got plan:\n%s", name, plan)
		}
	}
}

// queryPlan returns the details of EXPLAIN QUERY PLAN for query with args,
// one line each.
func queryPlan(t *testing.T, d *Driver, query string, args ...any) string {
	t.Helper()
	rows, err := d.DB().QueryContext(testCtx(t), "EXPLAIN QUERY PLAN "+query, args...)
	if err != nil {
		t.Fatalf("EXPLAIN QUERY PLAN: %v", err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var id, parent, unused int
		var detail string
		if err := rows.Scan(&id, &parent, &unused, &detail); err != nil {
			t.Fatal(err)
		}
		b.WriteString(detail + "\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// TestAnyExpiredPlan checks that a claim's look for expired leases is one
// seek in leasehold_jobs_leases, not a scan of the jobs, even once
// ANALYZE has seen many processing jobs.
func TestAnyExpiredPlan(t *testing.T) {
	d := openTest(t)
	insertN(t, d, 200)
	claim(t, d, "w", 100, time.Minute, false)
	if _, err := d.DB().ExecContext(testCtx(t), "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	plan := queryPlan(t, d, anyExpiredSQL, int64(0))
	if !strings.Contains(plan, "SEARCH leasehold_jobs USING COVERING INDEX leasehold_jobs_leases (lease_until<?)") {
		t.Errorf("want a seek in leasehold_jobs_leases, got plan:\n%s", plan)
	}
}

// TestExpiredPlan checks that the watcher finds expired leases through
// leasehold_jobs_leases, for every queue and for a list of queues alike.
func TestExpiredPlan(t *testing.T) {
	d := openTest(t)
	insertN(t, d, 200)
	claim(t, d, "w", 100, time.Minute, false)
	if _, err := d.DB().ExecContext(testCtx(t), "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	for name, queues := range map[string]any{"every queue": nil, "some queues": `["q", "r"]`} {
		plan := queryPlan(t, d, selectExpiredSQL, int64(0), 10, queues, "w", "[1, 2]")
		if !strings.Contains(plan, "INDEX leasehold_jobs_leases (lease_until<?)") {
			t.Errorf("%s: want a seek in leasehold_jobs_leases, got plan:\n%s", name, plan)
		}
	}
}

// TestClaimablePlanAfterAnalyze checks that the probe looks for a due job
// of each queue through leasehold_jobs_ready, also once ANALYZE has seen
// one queue whose every job is pending (as before a drain): it otherwise
// plans a scan of the table in rowid order, which stops at the first due
// job, but walks every job finished since then first.
func TestClaimablePlanAfterAnalyze(t *testing.T) {
	d := openTest(t)
	insertN(t, d, 3000)
	if _, err := d.DB().ExecContext(testCtx(t), "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct {
		query string
		args  []any
	}{"each": {claimableEachSQL, []any{`["k"]`, "w", `["q"]`}}, "scan": {claimableScanSQL, []any{`["k"]`, "w"}}} {
		plan := queryPlan(t, d, c.query, c.args...)
		if strings.Contains(plan, "SCAN j EXISTS") || !strings.Contains(plan, "EXISTS USING INDEX leasehold_jobs_ready (queue=?)") {
			t.Errorf("%s: want the due job looked up in leasehold_jobs_ready, got plan:\n%s", name, plan)
		}
	}
}

// TestReadClaimedPlan checks that the read of claimed jobs walks the
// claim's leases and looks each job up by id, also once ANALYZE has seen
// many processing jobs or none: planned from the processing jobs instead, with
// the leases searched for each, a read of a thousand leases compares a
// million pairs.
func TestReadClaimedPlan(t *testing.T) {
	d := openTest(t)
	insertN(t, d, 300)
	for _, when := range []string{"every job pending", "a third processing"} {
		if _, err := d.DB().ExecContext(testCtx(t), "ANALYZE"); err != nil {
			t.Fatal(err)
		}
		plan := queryPlan(t, d, readClaimedSQL, `[[1,1]]`, "w")
		if !strings.HasPrefix(plan, "SCAN json_each") || !strings.Contains(plan, "SEARCH j USING INTEGER PRIMARY KEY (rowid=?)") {
			t.Errorf("ANALYZE with %s: want the leases scanned and each job found by id, got plan:\n%s", when, plan)
		}
		claim(t, d, "w", 100, time.Minute, false)
	}
}
