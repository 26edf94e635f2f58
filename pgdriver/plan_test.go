package pgdriver

import (
	"regexp"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	leasehold "github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// TestBatchWritesUsePrimaryKey checks the plans of the statements that
// write for a batch of leases (Heartbeat, Finish of one transition, Finish
// of mixed transitions, whole or split, the rescue's writes) in the state that once made
// them quadratic: a queue analyzed while every job was pending, so the
// statistics say no job has a lease owner. Each must find its jobs through
// the primary key, never by scanning the table or rescanning its input for
// every job.
func TestBatchWritesUsePrimaryKey(t *testing.T) {
	t.Run("postgres", testBatchWritesUsePrimaryKey)
}

func testBatchWritesUsePrimaryKey(t *testing.T) {
	d, _ := newTestDriver(t)
	ctx := testCtx(t)
	const pending, leased = 20_000, 1000
	insertBulk(t, d, "q", pending)
	if _, err := d.pool.Exec(ctx, "ANALYZE leasehold_jobs"); err != nil {
		t.Fatalf("ANALYZE: %v", err)
	}
	jobs := claimN(t, d, "q", "w", leaseTTL, leased)
	lease := func(i int) driver.LeaseRef { return driver.LeaseRef{ID: jobs[i].ID, Attempt: jobs[i].Attempt} }
	ids, leases := leaseSet(leased, lease)
	mixed := make([]*driver.FinishParams, leased)
	for i, j := range jobs {
		mixed[i] = &driver.FinishParams{ID: j.ID, Owner: "w", Attempt: j.Attempt, Transition: transition(leasehold.OutcomeRetried, "")}
	}
	done := transition(leasehold.OutcomeCompleted, "")
	_, inputs, err := finishInputs(mixed)
	if err != nil {
		t.Fatal(err)
	}
	gIDs, gLeases := leaseSet(leased/2, lease)
	rIDs, rInputs, err := finishInputs(mixed[leased/2:])
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []struct {
		name string
		sql  string
		args []any
	}{
		{"heartbeat", heartbeatSQL, []any{ids, leases, "w", int64(1e6)}},
		{"finish uniform (completed)", finishUniformSQL, append([]any{ids, leases, "w"}, uniformArgs(done)...)},
		{"finish mixed", finishSQL, []any{ids, inputs}},
		{"rescue", rescueApplySQL, []any{ids, inputs}},
		{"finish split", finishSplitSQL, append(append([]any{gIDs, gLeases, "w"}, uniformArgs(done)...), rIDs, rInputs)},
	} {
		plan := explain(t, d, s.sql, s.args...)
		if !strings.Contains(plan, "Index Scan using leasehold_jobs_pkey on leasehold_jobs j") ||
			strings.Contains(plan, "Seq Scan on leasehold_jobs") || strings.Contains(plan, "Function Scan on unnest") {
			t.Errorf("%s: want the jobs found by primary key, got plan:\n%s", s.name, plan)
		}
	}
}

// explain returns the plan PostgreSQL makes for sql with args bound, as
// the first execution of a prepared statement gets it.
func explain(t *testing.T, d *Driver, sql string, args ...any) string {
	t.Helper()
	rows, err := d.pool.Query(testCtx(t), "EXPLAIN "+sql, args...)
	return readPlan(t, rows, err)
}

// readPlan returns the lines of an EXPLAIN's rows, each cut at 160
// characters (the bound arrays and objects).
func readPlan(t *testing.T, rows pgx.Rows, err error) string {
	t.Helper()
	if err != nil {
		t.Fatalf("EXPLAIN: %v", err)
	}
	defer rows.Close()
	var b strings.Builder
	for rows.Next() {
		var line string
		if err := rows.Scan(&line); err != nil {
			t.Fatalf("EXPLAIN: %v", err)
		}
		if len(line) > 160 {
			line = line[:160] + "…"
		}
		b.WriteString(line + "\n")
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("EXPLAIN: %v", err)
	}
	return b.String()
}

// TestClaimPlanChecksPauseOnce checks the claim's plan on a queue of many
// ready jobs: the ready jobs come from their partial index, and the
// paused-queue check runs once per statement (a one-time filter of an
// init plan), not once per candidate job.
func TestClaimPlanChecksPauseOnce(t *testing.T) {
	d, _ := newTestDriver(t)
	ctx := testCtx(t)
	insertBulk(t, d, "q", 20_000)
	for _, q := range []string{"other", "more"} {
		if err := d.PauseQueue(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := d.pool.Exec(ctx, "ANALYZE leasehold_jobs, leasehold_queues"); err != nil {
		t.Fatalf("ANALYZE: %v", err)
	}
	for _, tc := range []struct {
		name, sql string
		pauses    int // takeover and pending candidates, or pending alone
	}{
		{"take over", d.claims.takeOver.full, 2},
		{"pending", d.claims.pending.full, 1},
	} {
		plan := explain(t, d, tc.sql, "w", int64(1e6), "q", []string{"k"}, 500)
		if !strings.Contains(plan, "leasehold_jobs_ready_idx") || strings.Contains(plan, "Seq Scan on leasehold_jobs") {
			t.Errorf("%s claim: want the ready jobs from leasehold_jobs_ready_idx, got plan:\n%s", tc.name, plan)
		}
		// The pause filters read "One-Time Filter: (NOT $n)"; the
		// history's check for open rows (endAttemptsSQL) is a positive one.
		pauses := regexp.MustCompile(`One-Time Filter: \(NOT \$\d+\)`).FindAllString(plan, -1)
		if n := len(pauses); n != tc.pauses || strings.Contains(plan, "SubPlan") {
			t.Errorf("%s claim: want the pause checked by %d one-time filters and no per-row subplan, got plan:\n%s", tc.name, tc.pauses, plan)
		}
	}
}
