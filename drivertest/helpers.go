package drivertest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/statemachine"
)

const (
	// liveTTL is a lease that cannot expire during a test.
	liveTTL = time.Minute
	// shortTTL is a lease a test waits out (by polling the database clock).
	shortTTL = 50 * time.Millisecond
	// slack absorbs the storage precision of timestamps (SQLite keeps
	// milliseconds) in comparisons with the database clock.
	slack = 5 * time.Millisecond
	// waitTimeout bounds every wait on a database event.
	waitTimeout = 10 * time.Second
	// pollEvery is the polling period of waits.
	pollEvery = 5 * time.Millisecond
)

// tc is the state of one conformance test: its driver and context.
type tc struct {
	*testing.T
	ctx context.Context
	h   Harness
	d   driver.Driver
}

func newTC(t *testing.T, h Harness) *tc {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	return &tc{T: t, ctx: ctx, h: h, d: h.Open(t)}
}

// with returns c for the subtest t, sharing c's driver.
func (c *tc) with(t *testing.T) *tc {
	return &tc{T: t, ctx: c.ctx, h: c.h, d: c.d}
}

// second opens another driver on c's database.
func (c *tc) second() driver.Driver {
	c.Helper()
	return c.h.OpenSecond(c.T, c.d)
}

// job returns insert params for a job of kind in queue, with a retry
// budget of 3.
func job(queue, kind string) *driver.InsertParams {
	return &driver.InsertParams{Kind: kind, Queue: queue, Args: []byte(`{"n":1}`), MaxAttempts: 3}
}

// insert inserts ps without a transaction and returns the new rows.
func (c *tc) insert(ps ...*driver.InsertParams) []*leasehold.JobRow {
	c.Helper()
	res, err := c.d.Insert(c.ctx, nil, ps)
	if err != nil {
		c.Fatalf("Insert: %v", err)
	}
	if len(res) != len(ps) {
		c.Fatalf("Insert of %d jobs returned %d results", len(ps), len(res))
	}
	rows := make([]*leasehold.JobRow, len(res))
	for i, r := range res {
		if r == nil || r.Job == nil || r.Duplicate {
			c.Fatalf("Insert result %d = %+v, want a new job", i, r)
		}
		rows[i] = r.Job
	}
	return rows
}

// insertN inserts n jobs of kind in queue.
func (c *tc) insertN(n int, queue, kind string) []*leasehold.JobRow {
	c.Helper()
	ps := make([]*driver.InsertParams, n)
	for i := range ps {
		ps[i] = job(queue, kind)
		ps[i].Args = fmt.Appendf(nil, `{"n":%d}`, i)
	}
	return c.insert(ps...)
}

// now reads the database clock.
func (c *tc) now() time.Time {
	c.Helper()
	n, err := c.d.Now(c.ctx)
	if err != nil {
		c.Fatalf("Now: %v", err)
	}
	return n
}

// get reads one job.
func (c *tc) get(id int64) *leasehold.JobRow {
	c.Helper()
	j, err := c.d.GetJob(c.ctx, id)
	if err != nil {
		c.Fatalf("GetJob(%d): %v", id, err)
	}
	return j
}

// attempts reads a job's history.
func (c *tc) attempts(id int64) []*leasehold.Attempt {
	c.Helper()
	as, err := c.d.ListAttempts(c.ctx, id)
	if err != nil {
		c.Fatalf("ListAttempts(%d): %v", id, err)
	}
	return as
}

// claimID leases job id for owner through d and fails the test when it is
// not claimable.
func (c *tc) claimID(d driver.Driver, id int64, owner string, ttl time.Duration, takeOver bool) *leasehold.JobRow {
	c.Helper()
	j, err := d.ClaimByID(c.ctx, &driver.ClaimByIDParams{ID: id, Owner: owner, TTL: ttl, TakeOver: takeOver})
	if err != nil {
		c.Fatalf("ClaimByID(%d, %s): %v", id, owner, err)
	}
	if j == nil {
		c.Fatalf("ClaimByID(%d, %s) = nil, want the job claimed", id, owner)
	}
	return j
}

// expireAll leases each of rows to owner for shortTTL and waits until
// every lease has expired by the database clock. It returns the leases.
func (c *tc) expireAll(owner string, rows []*leasehold.JobRow) []*leasehold.JobRow {
	c.Helper()
	held := make([]*leasehold.JobRow, 0, len(rows))
	for _, r := range rows {
		held = append(held, c.claimID(c.d, r.ID, owner, shortTTL, false))
	}
	c.waitExpired(held...)
	return held
}

// claim runs one Claim of up to limit jobs of queue with kind "k".
func (c *tc) claim(queue, owner string, limit int, takeOver bool) []*leasehold.JobRow {
	c.Helper()
	rows, err := c.d.Claim(c.ctx, &driver.ClaimParams{
		Queue: queue, Kinds: []string{"k"}, Owner: owner, TTL: liveTTL, Limit: limit, TakeOver: takeOver,
	})
	if err != nil {
		c.Fatalf("Claim(%s, %s): %v", queue, owner, err)
	}
	return rows
}

// finish applies ps without a transaction and returns the accepted ids.
func (c *tc) finish(ps ...*driver.FinishParams) []int64 {
	c.Helper()
	return driver.FinishedIDs(c.finishResults(ps...))
}

// finishResults applies ps without a transaction and returns Finish's
// results.
func (c *tc) finishResults(ps ...*driver.FinishParams) []driver.FinishResult {
	c.Helper()
	rs, err := c.d.Finish(c.ctx, nil, ps)
	if err != nil {
		c.Fatalf("Finish: %v", err)
	}
	return rs
}

// heartbeat renews leases of owner and returns the result by id (each
// lease's CancelRequested). With no other transaction open, every lease
// held is renewed: none comes back Locked.
func (c *tc) heartbeat(owner string, ttl time.Duration, leases ...driver.LeaseRef) map[int64]bool {
	c.Helper()
	res, err := c.d.Heartbeat(c.ctx, &driver.HeartbeatParams{Owner: owner, TTL: ttl, Leases: leases})
	if err != nil {
		c.Fatalf("Heartbeat(%s): %v", owner, err)
	}
	m := make(map[int64]bool, len(res))
	for _, r := range res {
		if _, dup := m[r.ID]; dup {
			c.Errorf("Heartbeat returned job %d twice", r.ID)
		}
		if r.Locked {
			c.Errorf("Heartbeat returned job %d locked, not renewed, with no other transaction open", r.ID)
		}
		m[r.ID] = r.CancelRequested
	}
	return m
}

// ref returns the fencing token of a claimed job.
func ref(j *leasehold.JobRow) driver.LeaseRef {
	return driver.LeaseRef{ID: j.ID, Attempt: j.Attempt}
}

// fin returns the finish params of outcome o (no delay, no error text)
// for the lease j, with the state machine's transition.
func fin(j *leasehold.JobRow, o leasehold.Outcome) *driver.FinishParams {
	return token(j.ID, j.LeaseOwner, j.Attempt, statemachine.Ending{Outcome: o})
}

// token returns the finish params of the lease (id, owner, attempt) for
// the ending e, with the state machine's transition.
func token(id int64, owner string, attempt int, e statemachine.Ending) *driver.FinishParams {
	return &driver.FinishParams{ID: id, Owner: owner, Attempt: attempt, Transition: statemachine.Finish(e)}
}

// waitFor polls cond until it returns true, failing the test after
// waitTimeout.
func (c *tc) waitFor(what string, cond func() bool) {
	c.Helper()
	deadline := time.Now().Add(waitTimeout)
	for !cond() {
		if time.Now().After(deadline) {
			c.Fatalf("timed out after %v waiting for %s", waitTimeout, what)
		}
		select {
		case <-c.ctx.Done():
			c.Fatalf("waiting for %s: %v", what, c.ctx.Err())
		case <-time.After(pollEvery):
		}
	}
}

// waitPast waits until the database clock is strictly after ts.
func (c *tc) waitPast(ts time.Time) {
	c.Helper()
	c.waitFor(fmt.Sprintf("database clock past %v", ts), func() bool { return c.now().After(ts) })
}

// waitExpired waits until the database clock is past the lease of every
// job in rows (as they were returned by a claim or GetJob).
func (c *tc) waitExpired(rows ...*leasehold.JobRow) {
	c.Helper()
	var last time.Time
	for _, j := range rows {
		if j.LeaseUntil.IsZero() {
			c.Fatalf("job %d has no lease to wait out", j.ID)
		}
		if j.LeaseUntil.After(last) {
			last = j.LeaseUntil
		}
	}
	c.waitPast(last)
}

// ids returns the sorted ids of rows.
func ids(rows []*leasehold.JobRow) []int64 {
	out := make([]int64, len(rows))
	for i, j := range rows {
		out[i] = j.ID
	}
	slices.Sort(out)
	return out
}

// rawIDs returns the ids of rows in their order.
func rawIDs(rows []*leasehold.JobRow) []int64 {
	out := make([]int64, len(rows))
	for i, j := range rows {
		out[i] = j.ID
	}
	return out
}

// sorted returns a sorted copy of ids.
func sorted(ids ...int64) []int64 {
	out := slices.Clone(ids)
	slices.Sort(out)
	if out == nil {
		out = []int64{}
	}
	return out
}

// eqIDs reports an error unless got and want hold the same ids.
func (c *tc) eqIDs(what string, got, want []int64) {
	c.Helper()
	g, w := sorted(got...), sorted(want...)
	if !slices.Equal(g, w) {
		c.Errorf("%s: ids = %v, want %v", what, g, w)
	}
}
