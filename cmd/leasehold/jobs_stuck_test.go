package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/view"
)

// TestJobsStuckLimit: `jobs stuck --limit N` lists at most N jobs of each
// sort and, for each sort with more, says so below the table (on stderr
// with --json, stdout staying a JSON array); a limit that holds every job
// says nothing.
func TestJobsStuckLimit(t *testing.T) {
	forEachDB(t, func(t *testing.T, db string) {
		expireLeases(t, db, "flagged", 3)
		ok(t, db, "watch", "--once", "--flag-stuck", "flagged")
		expireLeases(t, db, "plain", 3)
		const expiredLine, flaggedLine = "… more processing jobs with an expired lease match: only the first 2 are listed (raise --limit)",
			"… more jobs flagged stuck match: only the first 2 are listed (raise --limit)"
		out := ok(t, db, "jobs", "stuck", "--limit", "2")
		if !strings.Contains(out, expiredLine) || !strings.Contains(out, flaggedLine) {
			t.Errorf("jobs stuck --limit 2 printed:\n%s\nwant the lines %q and %q", out, expiredLine, flaggedLine)
		}
		r := lh(t, db, "--json", "jobs", "stuck", "--limit", "2")
		var jobs []view.JobView
		if err := json.Unmarshal([]byte(r.stdout), &jobs); r.code != 0 || err != nil || len(jobs) != 4 {
			t.Errorf("jobs stuck --limit 2 --json: %v, %d jobs\n%s", err, len(jobs), r)
		}
		if !strings.Contains(r.stderr, expiredLine) || !strings.Contains(r.stderr, flaggedLine) {
			t.Errorf("jobs stuck --limit 2 --json stderr %q lacks the lines %q and %q", r.stderr, expiredLine, flaggedLine)
		}
		if out := ok(t, db, "jobs", "stuck", "--limit", "3"); strings.Contains(out, "more") {
			t.Errorf("jobs stuck --limit 3, which lists every job, printed:\n%s", out)
		}
		if out := ok(t, db, "jobs", "stuck", "--limit", "2", "--queue", "plain"); !strings.Contains(out, expiredLine) ||
			strings.Contains(out, flaggedLine) {
			t.Errorf("jobs stuck --limit 2 --queue plain printed:\n%s\nwant only the line %q", out, expiredLine)
		}
	})
}

// expireLeases enqueues n jobs in queue and leases each for a
// millisecond, so that their leases have expired when it returns.
func expireLeases(t *testing.T, db, queue string, n int) {
	t.Helper()
	d := openDB(t, db).Driver
	for range n {
		id := enqueueID(t, db, "leasehold.sleep", "--queue", queue)
		claimByID(t.Context(), t, d, id, "gone", time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond)
}

// TestJobsStuckJSONRefusesUnclaimedAfter: --json prints the jobs only, so
// --unclaimed-after, which would be ignored, is a usage error; without
// the flag --json still prints the array.
func TestJobsStuckJSONRefusesUnclaimedAfter(t *testing.T) {
	db := "sqlite:" + t.TempDir() + "/lh.db"
	ok(t, db, "migrate")
	r := lh(t, db, "--json", "jobs", "stuck", "--unclaimed-after", "5m")
	checkOneLineError(t, "jobs stuck --json --unclaimed-after", r, cli.ExitUsage, "--unclaimed-after does not apply with --json")
	var jobs []view.JobView
	okJSON(t, db, &jobs, "jobs", "stuck")
	ok(t, db, "jobs", "stuck", "--unclaimed-after", "5m")
}
