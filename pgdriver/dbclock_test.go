package pgdriver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	leasehold "github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/statemachine"
	"github.com/leasehold/leasehold/internal/testdb"
)

// clockFuncs are the clock functions the driver's SQL calls, each with
// its volatility, which its stand-in keeps.
var clockFuncs = []struct{ name, volatility string }{
	{"now", "STABLE"},
	{"transaction_timestamp", "STABLE"},
	{"statement_timestamp", "STABLE"},
	{"clock_timestamp", "VOLATILE"},
}

// TestDatabaseClockDecidesExpiry checks that only the database clock
// decides when a job is due and when a lease expires (docs/design.md,
// invariant 6). The test process and the server share the host clock, so
// every other test would pass a driver that compared run_at or
// lease_until with a time sent from Go; here the database clock is an hour
// ahead of the client's, or an hour behind, and each time the test
// places lies between the two clocks, so that the clocks disagree on it.
func TestDatabaseClockDecidesExpiry(t *testing.T) {
	for _, skew := range []time.Duration{time.Hour, -time.Hour} {
		name := "ahead"
		if skew < 0 {
			name = "behind"
		}
		t.Run(name, func(t *testing.T) {
			d := openSkewed(t, skew)
			checkSkewed(t, d, skew)
			t.Run("RunAt", func(t *testing.T) { checkDueByDatabaseClock(t, d, skew) })
			t.Run("LeaseExpiry", func(t *testing.T) { checkLeaseExpiryByDatabaseClock(t, d, skew) })
			t.Run("FenceTx", func(t *testing.T) { checkFenceByDatabaseClock(t, d, skew) })
			t.Run("Heartbeat", func(t *testing.T) { checkHeartbeatByDatabaseClock(t, d) })
			t.Run("Probe", func(t *testing.T) { checkProbeByDatabaseClock(t, d, skew) })
			t.Run("RetryRunAt", func(t *testing.T) { checkRetryByDatabaseClock(t, d) })
		})
	}
}

// openSkewed returns a migrated driver on a fresh schema whose clock is
// skew away from the host's: the schema holds a stand-in for each of
// clockFuncs that returns pg_catalog's value plus skew, and the driver's
// search_path names the schema before pg_catalog, so that the driver's
// unqualified calls resolve to the stand-ins (pg_catalog is searched
// first only when the path does not name it). The stand-ins exist before
// the migrations run, so the columns' defaults call them too.
func openSkewed(t *testing.T, skew time.Duration) *Driver {
	t.Helper()
	ctx := testCtx(t)
	u, err := url.Parse(testdb.PostgresURL(t))
	if err != nil {
		t.Fatalf("parse test URL: %v", err)
	}
	q := u.Query()
	schema := q.Get("search_path")
	q.Set("search_path", schema+",pg_catalog")
	u.RawQuery = q.Encode()

	conn, err := pgx.Connect(ctx, u.String())
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer conn.Close(ctx)
	for _, f := range clockFuncs {
		stmt := fmt.Sprintf(`CREATE FUNCTION %s() RETURNS timestamptz LANGUAGE sql %s
			AS $$ SELECT pg_catalog.%s() + interval '%d microseconds' $$`,
			pgx.Identifier{schema, f.name}.Sanitize(), f.volatility, f.name, micros(skew))
		if _, err := conn.Exec(ctx, stmt); err != nil {
			t.Fatalf("create %s(): %v", f.name, err)
		}
	}

	d, err := Open(ctx, u.String())
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = d.Close() })
	if _, err := d.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	return d
}

// checkSkewed fails t unless the driver's statements read the skewed
// clock: Driver.Now, and each of clockFuncs called as the driver's SQL
// calls it, unqualified, on the main pool and on the heartbeat pool.
func checkSkewed(t *testing.T, d *Driver, skew time.Duration) {
	t.Helper()
	ctx := testCtx(t)
	near := func(what string, got time.Time) {
		t.Helper()
		if off := time.Until(got) - skew; off < -5*time.Minute || off > 5*time.Minute {
			t.Fatalf("%s = %v is %v from the host clock, want about %v: the stand-in is not called",
				what, got, time.Until(got), skew)
		}
	}
	now, err := d.Now(ctx)
	if err != nil {
		t.Fatalf("Now: %v", err)
	}
	near("Driver.Now", now)
	for _, f := range clockFuncs {
		for pool, p := range map[string]interface {
			QueryRow(context.Context, string, ...any) pgx.Row
		}{"main": d.pool, "heartbeat": d.hbPool} {
			var got time.Time
			if err := p.QueryRow(ctx, "SELECT "+f.name+"()").Scan(&got); err != nil {
				t.Fatalf("%s() on the %s pool: %v", f.name, pool, err)
			}
			near(f.name+"() on the "+pool+" pool", got)
		}
	}
}

// labelled is a job of kind "k" in queue whose args name it.
func labelled(queue, name string) *driver.InsertParams {
	p := job(queue)
	p.Args = []byte(fmt.Sprintf(`{"name":%q}`, name))
	return p
}

// labelOf returns the name labelled put in j's args.
func labelOf(t *testing.T, j *leasehold.JobRow) string {
	t.Helper()
	var a struct{ Name string }
	if err := json.Unmarshal(j.Args, &a); err != nil {
		t.Fatalf("job %d args %s: %v", j.ID, j.Args, err)
	}
	return a.Name
}

// checkDueByDatabaseClock inserts a job with RunAt half the skew before
// the database's now, and two with RunIn half the skew (one by Insert,
// one by InsertBulk's COPY): the database clock finds the first due when
// it is ahead and the other two due when it is behind, the client's clock
// the opposite. A claim must lease exactly what the database finds due.
func checkDueByDatabaseClock(t *testing.T, d *Driver, skew time.Duration) {
	ctx := testCtx(t)
	const queue = "runat"
	dbNow, err := d.Now(ctx)
	if err != nil {
		t.Fatalf("Now: %v", err)
	}
	at := labelled(queue, "run_at")
	at.RunAt = dbNow.Add(-skew / 2)
	in := labelled(queue, "run_in")
	in.RunIn = skew / 2
	if _, err := d.Insert(ctx, nil, []*driver.InsertParams{at, in}); err != nil {
		t.Fatalf("Insert: %v", err)
	}
	bulk := labelled(queue, "bulk_run_in")
	bulk.RunIn = skew / 2
	if _, err := d.InsertBulk(ctx, []*driver.InsertParams{bulk}); err != nil {
		t.Fatalf("InsertBulk: %v", err)
	}

	want := []string{"bulk_run_in", "run_in"}
	if skew > 0 {
		want = []string{"run_at"}
	}
	jobs, err := d.Claim(ctx, &driver.ClaimParams{Queue: queue, Kinds: []string{"k"}, Owner: "w", TTL: leaseTTL, Limit: 3})
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	var got []string
	for _, j := range jobs {
		got = append(got, labelOf(t, j))
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Fatalf("claimed %v, want %v: the jobs due by the database clock, %v from the client's", got, want, skew)
	}
}

// leasePair inserts two jobs in queue and leases them to owner: the first
// for minus half the skew, the second for half the skew. It returns the
// lease that has expired by the database clock and the one that has not;
// the client's clock says the opposite of each.
func leasePair(t *testing.T, d *Driver, queue, owner string, skew time.Duration) (expired, held *leasehold.JobRow) {
	t.Helper()
	ctx := testCtx(t)
	var leased [2]*leasehold.JobRow
	for i, ttl := range []time.Duration{-skew / 2, skew / 2} {
		res, err := d.Insert(ctx, nil, []*driver.InsertParams{job(queue)})
		if err != nil {
			t.Fatalf("Insert: %v", err)
		}
		j, err := d.ClaimByID(ctx, &driver.ClaimByIDParams{ID: res[0].Job.ID, Owner: owner, TTL: ttl})
		if err != nil || j == nil {
			t.Fatalf("ClaimByID(%d): %v, %v", res[0].Job.ID, j, err)
		}
		leased[i] = j
	}
	if skew > 0 {
		return leased[0], leased[1]
	}
	return leased[1], leased[0]
}

// checkLeaseExpiryByDatabaseClock leases two pairs of jobs (leasePair):
// the watcher (RescueExpired) must move exactly the expired lease of the
// first pair, and a claim that takes over exactly the expired lease of
// the second.
func checkLeaseExpiryByDatabaseClock(t *testing.T, d *Driver, skew time.Duration) {
	ctx := testCtx(t)
	expired, held := leasePair(t, d, "rescue", "gone", skew)
	rescued, err := d.RescueExpired(ctx, &driver.RescueParams{
		Decide: statemachine.Rescuer(nil), Queues: []string{"rescue"},
	})
	if err != nil {
		t.Fatalf("RescueExpired: %v", err)
	}
	if len(rescued) != 1 || rescued[0].ID != expired.ID {
		var ids []int64
		for _, r := range rescued {
			ids = append(ids, r.ID)
		}
		t.Fatalf("RescueExpired moved jobs %v, want job %d only (expired by the database clock; job %d is not)",
			ids, expired.ID, held.ID)
	}
	if j := getJob(t, d, held.ID); j.State != leasehold.StateProcessing || j.Attempt != 1 {
		t.Fatalf("job %d, its lease held by the database clock, after the rescue: %+v", held.ID, j)
	}

	expired, held = leasePair(t, d, "takeover", "gone", skew)
	jobs, err := d.Claim(ctx, &driver.ClaimParams{
		Queue: "takeover", Kinds: []string{"k"}, Owner: "next", TTL: leaseTTL, Limit: 2, TakeOver: true,
	})
	if err != nil {
		t.Fatalf("Claim: %v", err)
	}
	if len(jobs) != 1 || jobs[0].ID != expired.ID || jobs[0].Attempt != 2 {
		var got []string
		for _, j := range jobs {
			got = append(got, fmt.Sprintf("%d@%d", j.ID, j.Attempt))
		}
		t.Fatalf("takeover claimed %v (id@attempt), want job %d at attempt 2 only (expired by the database clock; job %d is not)",
			got, expired.ID, held.ID)
	}
}

// checkFenceByDatabaseClock leases a pair of jobs (leasePair): FenceTx
// must refuse the expired lease with ErrLeaseLost and accept the other.
func checkFenceByDatabaseClock(t *testing.T, d *Driver, skew time.Duration) {
	ctx := testCtx(t)
	expired, held := leasePair(t, d, "fence", "w", skew)
	fence := func(j *leasehold.JobRow) error {
		t.Helper()
		tx, err := d.pool.Begin(ctx)
		if err != nil {
			t.Fatalf("Begin: %v", err)
		}
		defer func() { _ = tx.Rollback(ctx) }()
		return d.FenceTx(ctx, tx, &driver.FenceParams{ID: j.ID, Owner: "w", Attempt: j.Attempt})
	}
	if err := fence(expired); !errors.Is(err, leasehold.ErrLeaseLost) {
		t.Fatalf("FenceTx of job %d, expired by the database clock: %v, want ErrLeaseLost", expired.ID, err)
	}
	if err := fence(held); err != nil {
		t.Fatalf("FenceTx of job %d, held by the database clock: %v", held.ID, err)
	}
}
