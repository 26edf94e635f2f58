package pgdriver

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	leasehold "github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// The finished jobs of finishedQueueTable: a busy queue's many, and a
// quiet queue's few, finished among them, a minute apart in all, the
// oldest two days ago.
const (
	busyFinished  = 20_000
	quietFinished = 40
)

// finishedQueueTable fills d with the finished jobs of a busy queue and
// of a quiet one, interleaved in finish time (one quiet job in 500),
// each with its history row and a checkpoint, and analyzes the tables.
func finishedQueueTable(t *testing.T, d *Driver) {
	t.Helper()
	ctx := testCtx(t)
	const every = (busyFinished + quietFinished) / quietFinished
	ps := make([]*driver.InsertParams, busyFinished+quietFinished)
	for i := range ps {
		ps[i] = job("busy")
		if i%every == every-1 {
			ps[i] = job("quiet")
		}
	}
	if _, err := d.InsertBulk(ctx, ps); err != nil {
		t.Fatalf("InsertBulk: %v", err)
	}
	for _, stmt := range []string{
		`UPDATE leasehold_jobs SET status = CASE WHEN id % 50 = 1 THEN 'failed' ELSE 'completed' END, attempt = 1,
			finished_at = now() - interval '2 days' + id * interval '1 minute' / 100`,
		`INSERT INTO leasehold_attempts (job_id, attempt, owner, claimed_at, ended_at, outcome)
			SELECT id, 1, 'w', finished_at, finished_at, 'completed' FROM leasehold_jobs`,
		`INSERT INTO leasehold_checkpoints (job_id, attempt, name, written_at)
			SELECT id, 1, 'step', finished_at FROM leasehold_jobs`,
		`VACUUM ANALYZE leasehold_jobs, leasehold_attempts, leasehold_checkpoints`,
	} {
		if _, err := d.pool.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
}

// rowsRead returns the rows the plan's scans of leasehold_jobs (whole, or
// through an index of finished jobs) returned and removed by their
// filters, in all.
func rowsRead(plan string) int {
	n := 0
	for _, re := range []*regexp.Regexp{
		regexp.MustCompile(`(?:Seq Scan|Scan(?: Backward)? using leasehold_jobs_finished\w*) on leasehold_jobs(?: \w+)? \(actual rows=(\d+) loops=1\)`),
		regexp.MustCompile(`Rows Removed by Filter: (\d+)`),
	} {
		for _, m := range re.FindAllStringSubmatch(plan, -1) {
			v, _ := strconv.Atoi(m[1])
			n += v
		}
	}
	return n
}

// TestFinishedOfOneQueueReadThroughItsIndex checks that what reads one
// queue's finished jobs in finish order (a client's retention, which
// purges its own queues only; ListJobs by queue and finish time, the
// dashboard's and the payments scan's) goes through
// leasehold_jobs_finished_queue_idx and reads that queue's jobs only: a
// quiet queue's among many of a busy one. Through
// leasehold_jobs_finished_idx, by finish time alone, each read walks the
// busy queue's jobs until it has found the quiet one's.
func TestFinishedOfOneQueueReadThroughItsIndex(t *testing.T) {
	d, _ := newTestDriver(t)
	finishedQueueTable(t, d)
	var cutoff time.Time // the quiet queue's middle job
	err := d.pool.QueryRow(testCtx(t), `SELECT finished_at FROM leasehold_jobs WHERE queue = 'quiet'
		ORDER BY finished_at OFFSET $1 LIMIT 1`, quietFinished/2).Scan(&cutoff)
	if err != nil {
		t.Fatal(err)
	}
	completed := []leasehold.JobState{leasehold.StateCompleted}
	type read struct {
		name string
		sql  string
		args []any
	}
	reads := []read{{"purge of the quiet queue", purgeQueuesSQL, []any{int64(time.Hour / time.Microsecond), 10_000, []string{"quiet"}}}}
	for name, p := range map[string]*leasehold.ListParams{
		"list by queue, kind, state and finish, newest first, before a cutoff": {
			Queue: "quiet", Kind: "k", States: completed, ByFinish: true, Desc: true, FinishedAt: cutoff, BeforeID: 1 << 62, Limit: 10_000},
		"list by queue, state and finish": {Queue: "quiet", States: completed, ByFinish: true, Limit: 51},
	} {
		sql, args := listQuery(p)
		reads = append(reads, read{name, sql, args})
	}
	for _, r := range reads {
		plan := explainAnalyze(t, d, "", r.sql, r.args...)
		if !strings.Contains(plan, "using leasehold_jobs_finished_queue_idx on leasehold_jobs") ||
			strings.Contains(plan, "Seq Scan on leasehold_jobs") {
			t.Errorf("%s: want the quiet queue's finished jobs from leasehold_jobs_finished_queue_idx, got plan:\n%s", r.name, plan)
			continue
		}
		if n := rowsRead(plan); n > quietFinished {
			t.Errorf("%s: read %d jobs, want the quiet queue's %d at most; plan:\n%s", r.name, n, quietFinished, plan)
		}
	}
}

// TestPurgeDeletesByKey checks that a purge batch deletes its jobs, their
// history and their checkpoints through each table's primary key, also
// in a generic plan (a statement cached by the pool and run more than
// five times may be planned so), which estimates the batch (LIMIT $2) at
// a tenth of the candidates: joined to the batch, the history and the
// checkpoints were then hashed and read whole, as the jobs were.
func TestPurgeDeletesByKey(t *testing.T) {
	d, _ := newTestDriver(t)
	finishedQueueTable(t, d)
	day := int64(24 * time.Hour / time.Microsecond)
	for _, s := range []struct {
		name, sql, params, values string
	}{
		{"purge", purgeSQL, "bigint, int", fmt.Sprintf("%d, 10000", day)},
		{"purge of some queues", purgeQueuesSQL, "bigint, int, text[]", fmt.Sprintf("%d, 10000, '{busy,quiet}'", day)},
	} {
		plan := explainGeneric(t, d, s.sql, s.params, s.values)
		var scanned []string
		for _, table := range []string{"leasehold_jobs", "leasehold_attempts", "leasehold_checkpoints"} {
			if !strings.Contains(plan, "Index Scan using "+table+"_pkey on "+table) || strings.Contains(plan, "Seq Scan on "+table) {
				scanned = append(scanned, table)
			}
		}
		if len(scanned) > 0 {
			t.Errorf("%s: want every table's rows found by primary key, but not those of %v; plan:\n%s", s.name, scanned, plan)
		}
		if !strings.Contains(plan, "Delete on leasehold_jobs") || !regexp.MustCompile(`CTE Scan on doomed \(actual rows=10000 `).MatchString(plan) {
			t.Errorf("%s: want a batch of 10,000 jobs deleted, got plan:\n%s", s.name, plan)
		}
	}
}

// explainGeneric runs sql, whose parameters have the types params, as a
// prepared statement with its generic plan and the values (SQL literals),
// under EXPLAIN ANALYZE in a transaction it rolls back, and returns the
// plan.
func explainGeneric(t *testing.T, d *Driver, sql, params, values string) string {
	t.Helper()
	ctx := testCtx(t)
	tx, err := d.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	const name = "leasehold_generic_plan"
	for _, stmt := range []string{
		"SET LOCAL plan_cache_mode = force_generic_plan",
		fmt.Sprintf("PREPARE %s (%s) AS %s", name, params, sql),
	} {
		if _, err := tx.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	rows, err := tx.Query(ctx, fmt.Sprintf("EXPLAIN (ANALYZE, COSTS OFF, TIMING OFF, SUMMARY OFF) EXECUTE %s (%s)", name, values))
	plan := readPlan(t, rows, err)
	if _, err := tx.Exec(ctx, "DEALLOCATE "+name); err != nil {
		t.Fatal(err)
	}
	return plan
}
