package sqlitedriver

import (
	"strings"
	"testing"
)

// TestPurgeQueuesPlan checks that the purge of some queues' finished jobs
// (a client's retention) reads them through
// leasehold_jobs_finished_queue_idx, one range per queue in the index's
// order, with no sort of what it read: a batch then stops at its limit,
// however many finished jobs its queues and the others hold. The purge of
// every queue keeps leasehold_jobs_finished.
func TestPurgeQueuesPlan(t *testing.T) {
	d := openTest(t)
	insertN(t, d, 3000)
	for _, stmt := range []string{
		`UPDATE leasehold_jobs SET status = 'completed', attempt = 1, finished_at = id,
			queue = CASE WHEN id % 100 = 0 THEN 'quiet' ELSE 'busy' END`,
		`ANALYZE`,
	} {
		if _, err := d.DB().ExecContext(testCtx(t), stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	for _, s := range []struct {
		name, query, index string
		args               []any
	}{
		{"some queues", purgeQueuesSQL, "leasehold_jobs_finished_queue_idx (queue=? AND finished_at<?)", []any{int64(2000), 100, `["quiet", "x"]`}},
		{"every queue", purgeSQL, "leasehold_jobs_finished (finished_at<?)", []any{int64(2000), 100}},
	} {
		plan := queryPlan(t, d, s.query, s.args...)
		if !strings.Contains(plan, "USING INDEX "+s.index) || strings.Contains(plan, "TEMP B-TREE") {
			t.Errorf("%s: want the finished jobs read in order through %s, got plan:\n%s", s.name, s.index, plan)
		}
	}
}
