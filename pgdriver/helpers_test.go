package pgdriver

import (
	"context"
	"testing"
	"time"

	leasehold "github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/statemachine"
	"github.com/leasehold/leasehold/internal/testdb"
)

// leaseTTL is a lease that outlives any test; expired leases are made
// with a negative TTL, so no test waits for a clock.
const leaseTTL = time.Minute

// testCtx returns a context that ends with the test, bounded in time.
func testCtx(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// newTestDriver opens a migrated driver on a fresh schema.
func newTestDriver(t *testing.T) (*Driver, string) {
	t.Helper()
	url := testdb.PostgresURL(t)
	ctx := testCtx(t)
	d, err := Open(ctx, url)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = d.Close() })
	if _, err := d.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return d, url
}

// job returns insert params for one job of kind "k" in queue.
func job(queue string) *driver.InsertParams {
	return &driver.InsertParams{Kind: "k", Queue: queue, Args: []byte(`{"n":1}`), MaxAttempts: 3}
}

// insertJobs inserts n jobs in queue and returns them.
func insertJobs(t *testing.T, d *Driver, queue string, n int) []*leasehold.JobRow {
	t.Helper()
	ps := make([]*driver.InsertParams, n)
	for i := range ps {
		ps[i] = job(queue)
	}
	res, err := d.Insert(testCtx(t), nil, ps)
	if err != nil {
		t.Fatalf("Insert: %v", err)
	}
	jobs := make([]*leasehold.JobRow, n)
	for i, r := range res {
		jobs[i] = r.Job
	}
	return jobs
}

// insertBulk inserts n jobs of kind "k" in queue with one COPY.
func insertBulk(t *testing.T, d *Driver, queue string, n int) {
	t.Helper()
	ps := make([]*driver.InsertParams, n)
	for i := range ps {
		ps[i] = job(queue)
	}
	if _, err := d.InsertBulk(testCtx(t), ps); err != nil {
		t.Fatalf("InsertBulk: %v", err)
	}
}

// claimOne claims one job of queue for owner and fails unless it gets one.
func claimOne(t *testing.T, d *Driver, queue, owner string, ttl time.Duration) *leasehold.JobRow {
	t.Helper()
	return claimN(t, d, queue, owner, ttl, 1)[0]
}

// claimN claims exactly n jobs of kind "k" in queue for owner, or fails.
func claimN(t *testing.T, d *Driver, queue, owner string, ttl time.Duration, n int) []*leasehold.JobRow {
	t.Helper()
	jobs, err := d.Claim(testCtx(t), &driver.ClaimParams{
		Queue: queue, Kinds: []string{"k"}, Owner: owner, TTL: ttl, Limit: n, TakeOver: true,
	})
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	if len(jobs) != n {
		t.Fatalf("Claim: got %d jobs, want %d", len(jobs), n)
	}
	return jobs
}

// getJob reads a job or fails.
func getJob(t *testing.T, d *Driver, id int64) *leasehold.JobRow {
	t.Helper()
	j, err := d.GetJob(testCtx(t), id)
	if err != nil {
		t.Fatalf("GetJob(%d): %v", id, err)
	}
	return j
}

// finish applies one outcome and reports whether its fence matched.
func finish(t *testing.T, d *Driver, tx any, p *driver.FinishParams) bool {
	t.Helper()
	ids, err := d.Finish(testCtx(t), tx, []*driver.FinishParams{p})
	if err != nil {
		t.Fatalf("Finish: %v", err)
	}
	return len(ids) == 1 && ids[0].ID == p.ID
}

// transition is the state machine's transition for outcome o with error
// text (and no delay).
func transition(o leasehold.Outcome, text string) driver.Transition {
	return statemachine.Finish(statemachine.Ending{Outcome: o, Error: text})
}
