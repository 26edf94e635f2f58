package sqlitedriver

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/statemachine"
	"github.com/leasehold/leasehold/internal/testdb"
)

// testCtx returns a context that ends with the test (or after a minute).
func testCtx(t testing.TB) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// openPath opens and migrates a Driver on path, closed with the test.
func openPath(t testing.TB, path string) *Driver {
	t.Helper()
	d, err := Open(path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := d.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	if _, err := d.Migrate(testCtx(t)); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return d
}

// openTest opens a migrated Driver on a fresh file.
func openTest(t testing.TB) *Driver {
	t.Helper()
	return openPath(t, testdb.SQLitePath(t))
}

// job returns insert params for a ready job of kind "k" in queue "q".
func job(args string) *driver.InsertParams {
	return &driver.InsertParams{Kind: "k", Queue: "q", Args: []byte(args), MaxAttempts: 3}
}

// insert inserts ps without a transaction and returns the jobs.
func insert(t testing.TB, d *Driver, ps ...*driver.InsertParams) []*leasehold.JobRow {
	t.Helper()
	res, err := d.Insert(testCtx(t), nil, ps)
	if err != nil {
		t.Fatalf("Insert: %v", err)
	}
	jobs := make([]*leasehold.JobRow, len(res))
	for i, r := range res {
		jobs[i] = r.Job
	}
	return jobs
}

// insertN inserts n ready jobs.
func insertN(t testing.TB, d *Driver, n int) {
	t.Helper()
	ps := make([]*driver.InsertParams, n)
	for i := range ps {
		ps[i] = job(fmt.Sprintf(`{"n":%d}`, i))
	}
	if got, err := d.InsertBulk(testCtx(t), ps); err != nil || got != int64(n) {
		t.Fatalf("InsertBulk = %d, %v; want %d", got, err, n)
	}
}

// claim claims up to limit jobs of queue "q" for owner with ttl.
func claim(t testing.TB, d *Driver, owner string, limit int, ttl time.Duration, takeOver bool) []*leasehold.JobRow {
	t.Helper()
	jobs, err := d.Claim(testCtx(t), &driver.ClaimParams{
		Queue: "q", Kinds: []string{"k"}, Owner: owner, TTL: ttl, Limit: limit, TakeOver: takeOver,
	})
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	return jobs
}

// mustGet reads job id or fails the test.
func mustGet(t testing.TB, d *Driver, id int64) *leasehold.JobRow {
	t.Helper()
	j, err := d.GetJob(testCtx(t), id)
	if err != nil {
		t.Fatalf("GetJob(%d): %v", id, err)
	}
	return j
}

// attempts lists the attempts of job id or fails the test.
func attempts(t testing.TB, d *Driver, id int64) []*leasehold.Attempt {
	t.Helper()
	as, err := d.ListAttempts(testCtx(t), id)
	if err != nil {
		t.Fatalf("ListAttempts(%d): %v", id, err)
	}
	return as
}

// finishOne finishes one lease and reports whether its fence matched.
func finishOne(t testing.TB, d *Driver, tx any, p *driver.FinishParams) bool {
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
