package pgdriver

import (
	"fmt"
	"strings"
	"testing"

	leasehold "github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// TestDashboardReadsUseIndexes checks the plans of what the dashboard
// reads (ActiveQueueStats' statements, the jobs list by each state, the
// per-minute totals) on a table of mostly finished and pending jobs: none
// may scan the jobs table, whose size they must not depend on.
func TestDashboardReadsUseIndexes(t *testing.T) {
	d, _ := newTestDriver(t)
	ctx := testCtx(t)
	ps := make([]*driver.InsertParams, 40_000)
	for i := range ps {
		ps[i] = job(fmt.Sprintf("q%d", i%4))
	}
	if _, err := d.InsertBulk(ctx, ps); err != nil {
		t.Fatalf("InsertBulk: %v", err)
	}
	for _, stmt := range []string{
		`UPDATE leasehold_jobs SET status = 'completed', attempt = 1, finished_at = now() WHERE id % 10 < 6`,
		`UPDATE leasehold_jobs SET status = 'failed', attempt = 1, finished_at = now() WHERE id % 100 = 61`,
		`UPDATE leasehold_jobs SET status = 'stuck', attempt = 1 WHERE id % 1000 = 62`,
		`UPDATE leasehold_jobs SET status = 'processing', attempt = 1, lease_owner = 'w', lease_until = now() WHERE id % 1000 = 63`,
		`VACUUM ANALYZE leasehold_jobs`,
	} {
		if _, err := d.pool.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	list := func(p *leasehold.ListParams) (string, []any) {
		p.Desc, p.Limit = true, 51
		return listQuery(p)
	}
	states := func(s ...leasehold.JobState) []leasehold.JobState { return s }
	type stmt struct {
		name string
		sql  string
		args []any
	}
	stmts := []stmt{
		{"active pending", activePendingSQL, []any{driver.DefaultCountLimit}},
		{"active leases", activeLeasesSQL, nil},
		{"active flagged", fmt.Sprintf(activeFlaggedSQL, flaggedStates()), nil},
		{"active unclaimed", activeUnclaimedSQL, []any{driver.DefaultUnclaimedSample}},
		{"throughput", throughputSQL, []any{int64(3600e6)}},
	}
	for _, p := range []*leasehold.ListParams{
		{States: states(leasehold.StateCompleted), ByFinish: true},
		{States: states(leasehold.StateFailed), ByFinish: true},
		{States: states(leasehold.StateCancelled), ByFinish: true},
		{States: states(leasehold.StateStuck)},
		{States: states(leasehold.StatePending)},
		{States: states(leasehold.StateProcessing)},
		{Expired: true},
		{},
	} {
		sql, args := list(p)
		stmts = append(stmts, stmt{fmt.Sprintf("list %v by finish %v expired %v", p.States, p.ByFinish, p.Expired), sql, args})
	}
	for _, s := range stmts {
		if plan := explain(t, d, s.sql, s.args...); strings.Contains(plan, "Seq Scan on leasehold_jobs") {
			t.Errorf("%s scans the jobs table:\n%s", s.name, plan)
		}
	}
}
