package sqlitedriver

import (
	"strings"
	"testing"
)

// TestEndedAttemptsPlan checks that the read of ended attempts looks each
// lease up by leasehold_attempts' primary key, not by a scan of the
// history.
func TestEndedAttemptsPlan(t *testing.T) {
	d := openTest(t)
	plan := queryPlan(t, d, endedAttemptsSQL, `[[1,1],[2,1]]`)
	if !strings.Contains(plan, "SEARCH a USING PRIMARY KEY (job_id=? AND attempt=?)") {
		t.Errorf("want a primary-key lookup per lease, got plan:\n%s", plan)
	}
}
