package sqlitedriver

import (
	"strings"
	"testing"
	"time"
)

// TestJobIdentityCannotBeUpdated checks migration 013: an UPDATE that
// sets a job's uuid or id, even to itself, fails and changes nothing,
// while one of other columns (an operator's, or the driver's own) runs.
func TestJobIdentityCannotBeUpdated(t *testing.T) {
	d := openTest(t)
	ctx := testCtx(t)
	jobs := insert(t, d, job(`{}`), job(`{}`))
	other := jobs[1]
	for _, set := range []string{"uuid = lower(hex(randomblob(16)))", "id = id + 1000", "uuid = NULL",
		"priority = 5, uuid = '" + other.UUID + "'", "priority = 5, uuid = uuid"} {
		_, err := d.db.ExecContext(ctx, "UPDATE leasehold_jobs SET "+set+" WHERE id = ?", jobs[0].ID)
		if err == nil || !strings.Contains(err.Error(), "cannot be changed") {
			t.Fatalf("UPDATE leasehold_jobs SET %s: %v; want the job's id and uuid cannot be changed", set, err)
		}
	}
	if got := mustGet(t, d, jobs[0].ID); got.UUID != jobs[0].UUID || got.Priority != jobs[0].Priority {
		t.Fatalf("job after the refused updates: uuid %s, priority %d; want %s, %d", got.UUID, got.Priority, jobs[0].UUID, jobs[0].Priority)
	}
	if _, err := d.db.ExecContext(ctx, "UPDATE leasehold_jobs SET priority = 5 WHERE id = ?", jobs[0].ID); err != nil {
		t.Fatalf("UPDATE of the priority: %v", err)
	}
	if got := claim(t, d, "w", 10, time.Minute, false); len(got) != 2 {
		t.Fatalf("claimed %d jobs after the updates, want 2", len(got))
	}
}
