package pgdriver

import (
	"testing"
	"time"

	leasehold "github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// TestHistoryRowWrittenOnce checks the row versions a job's attempts
// write, from where each live version sits in the fresh tables (every
// update makes a new version at the next item of the page, and nothing
// prunes a page this small): a claim writes a job row version and no
// history row, and whatever ends an attempt (a takeover at claim, a
// completion) writes one job row version and inserts the attempt's
// history row, which nothing updates afterwards. A claimed and completed
// job so leaves two dead versions, both of its job row.
func TestHistoryRowWrittenOnce(t *testing.T) {
	d, _ := newTestDriver(t)
	ctx := testCtx(t)
	j := insertJobs(t, d, "q", 1)[0]
	first := claimOne(t, d, "q", "w1", 50*time.Millisecond)
	checkVersions(t, d, "after the claim", "(0,2)", nil)

	time.Sleep(100 * time.Millisecond) // the database clock decides; the takeover retries below
	var second *leasehold.JobRow
	for deadline := time.Now().Add(10 * time.Second); second == nil && time.Now().Before(deadline); {
		jobs, err := d.Claim(ctx, &driver.ClaimParams{Queue: "q", Kinds: []string{"k"}, Owner: "w2", TTL: time.Minute, Limit: 1, TakeOver: true})
		if err != nil {
			t.Fatalf("Claim: %v", err)
		}
		if len(jobs) == 1 {
			second = jobs[0]
		}
		time.Sleep(10 * time.Millisecond)
	}
	if second == nil || second.ID != j.ID || second.Attempt != first.Attempt+1 {
		t.Fatalf("takeover = %+v, want job %d at attempt 2", second, j.ID)
	}
	checkVersions(t, d, "after the takeover", "(0,3)", []string{"1 (0,1) lease_expired"})

	if !finish(t, d, nil, &driver.FinishParams{ID: j.ID, Owner: "w2", Attempt: 2, Transition: transition(leasehold.OutcomeCompleted, "")}) {
		t.Fatal("completion refused")
	}
	checkVersions(t, d, "after the completion", "(0,4)", []string{"1 (0,1) lease_expired", "2 (0,2) completed"})
}

// checkVersions compares where the one job's live row version sits and,
// for each history row in attempt order, its attempt, place and outcome.
func checkVersions(t *testing.T, d *Driver, when, job string, history []string) {
	t.Helper()
	ctx := testCtx(t)
	var got string
	if err := d.pool.QueryRow(ctx, "SELECT ctid::text FROM leasehold_jobs").Scan(&got); err != nil {
		t.Fatal(err)
	}
	if got != job {
		t.Errorf("%s: the job row's live version is at %s, want %s", when, got, job)
	}
	rows, err := d.pool.Query(ctx, `SELECT attempt || ' ' || ctid::text || ' ' || coalesce(outcome, '')
		FROM leasehold_attempts ORDER BY attempt`)
	if err != nil {
		t.Fatal(err)
	}
	var hist []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		hist = append(hist, s)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(hist) != len(history) {
		t.Fatalf("%s: history rows %q, want %q", when, hist, history)
	}
	for i := range hist {
		if hist[i] != history[i] {
			t.Errorf("%s: history rows %q, want %q", when, hist, history)
			break
		}
	}
}
