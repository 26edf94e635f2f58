package pgdriver

import (
	"testing"
	"time"

	leasehold "github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

func TestInsertRowsAndOrder(t *testing.T) {
	d, _ := newTestDriver(t)
	ctx := testCtx(t)
	now, err := d.Now(ctx)
	if err != nil {
		t.Fatal(err)
	}
	at := now.Add(time.Hour).Truncate(time.Microsecond)
	ps := []*driver.InsertParams{
		{Kind: "a", Queue: "q", Args: []byte(`{"x":1}`), MaxAttempts: 5, Priority: 2},
		{Kind: "b", Queue: "q", Args: []byte(`{"x":2}`), Metadata: []byte(`{"m":true}`), MaxAttempts: 1, RunAt: at},
		{Kind: "c", Queue: "q2", MaxAttempts: 1, RunIn: time.Hour},
	}
	res, err := d.Insert(ctx, nil, ps)
	if err != nil {
		t.Fatalf("Insert: %v", err)
	}
	for i, r := range res {
		if r.Duplicate || r.Job.Kind != ps[i].Kind || r.Job.State != leasehold.StatePending {
			t.Fatalf("result %d: %+v", i, r.Job)
		}
	}
	a, b, c := res[0].Job, res[1].Job, res[2].Job
	if a.Priority != 2 || a.MaxAttempts != 5 || string(a.Args) != `{"x": 1}` || string(a.Metadata) != `{}` {
		t.Errorf("job a: %+v", a)
	}
	if !b.RunAt.Equal(at) || string(b.Metadata) != `{"m": true}` {
		t.Errorf("job b: run_at %v want %v, metadata %s", b.RunAt, at, b.Metadata)
	}
	if c.RunAt.Sub(c.CreatedAt) != time.Hour || string(c.Args) != `{}` {
		t.Errorf("job c: run_at - created_at = %v, args %s", c.RunAt.Sub(c.CreatedAt), c.Args)
	}
	if !a.LeaseUntil.IsZero() || a.LeaseOwner != "" || a.UniqueKey != "" || !a.FinishedAt.IsZero() {
		t.Errorf("job a: NULL columns not zero: %+v", a)
	}
}

func TestInsertUniqueKeyDuplicate(t *testing.T) {
	d, _ := newTestDriver(t)
	ctx := testCtx(t)
	p := job("q")
	p.UniqueKey = "pay-42"
	first, err := d.Insert(ctx, nil, []*driver.InsertParams{p})
	if err != nil {
		t.Fatalf("Insert: %v", err)
	}
	again, err := d.Insert(ctx, nil, []*driver.InsertParams{job("q"), p, p})
	if err != nil {
		t.Fatalf("Insert duplicate: %v", err)
	}
	if again[0].Duplicate || again[0].Job.ID == first[0].Job.ID {
		t.Fatalf("plain job: %+v", again[0])
	}
	for _, r := range again[1:] {
		if !r.Duplicate || r.Job.ID != first[0].Job.ID {
			t.Fatalf("duplicate: got %+v (dup=%v), want existing job %d", r.Job, r.Duplicate, first[0].Job.ID)
		}
	}
	// Two new jobs with one new key in one call: the second is a duplicate
	// of the first.
	q := job("q")
	q.UniqueKey = "pay-43"
	res, err := d.Insert(ctx, nil, []*driver.InsertParams{q, q})
	if err != nil {
		t.Fatalf("Insert: %v", err)
	}
	if res[0].Duplicate || !res[1].Duplicate || res[0].Job.ID != res[1].Job.ID {
		t.Fatalf("same key twice: %+v %+v", res[0], res[1])
	}
}

func TestInsertBulk(t *testing.T) {
	d, _ := newTestDriver(t)
	ctx := testCtx(t)
	const n = 1000
	ps := make([]*driver.InsertParams, n)
	for i := range ps {
		ps[i] = job("bulk")
	}
	ps[0].RunIn = time.Hour
	got, err := d.InsertBulk(ctx, ps)
	if err != nil || got != n {
		t.Fatalf("InsertBulk (COPY) = %d, %v; want %d", got, err, n)
	}
	plain := []*driver.InsertParams{job("bulk"), job("bulk")} // run now: run_at default
	if got, err := d.InsertBulk(ctx, plain); err != nil || got != 2 {
		t.Fatalf("InsertBulk (COPY, default run_at) = %d, %v", got, err)
	}
	keyed := []*driver.InsertParams{job("bulk"), job("bulk"), job("bulk")}
	keyed[0].UniqueKey, keyed[1].UniqueKey = "u1", "u1"
	if got, err := d.InsertBulk(ctx, keyed); err != nil || got != 2 {
		t.Fatalf("InsertBulk (unique) = %d, %v; want 2", got, err)
	}
	if got, err := d.InsertBulk(ctx, keyed[:1]); err != nil || got != 0 {
		t.Fatalf("InsertBulk (duplicate) = %d, %v; want 0", got, err)
	}
	stats, err := d.QueueStats(ctx)
	if err != nil || len(stats) != 1 {
		t.Fatalf("QueueStats: %v %+v", err, stats)
	}
	if c := stats[0].Counts[leasehold.StatePending]; c != n+4 {
		t.Fatalf("pending = %d, want %d", c, n+4)
	}
	jobs, err := d.Claim(ctx, &driver.ClaimParams{Queue: "bulk", Kinds: []string{"k"}, Owner: "w", TTL: leaseTTL, Limit: 2 * n})
	if err != nil || len(jobs) != n+3 {
		t.Fatalf("Claim after bulk = %d jobs, %v; want %d (one is delayed)", len(jobs), err, n+3)
	}
}

// TestInsertRefusesValuesPastInt32: Insert and InsertBulk refuse a
// priority or a retry budget that the int32 columns cannot hold, instead
// of wrapping it (a reconcile policy's priority reaches Insert through
// the watcher, past the client's checks).
func TestInsertRefusesValuesPastInt32(t *testing.T) {
	d, _ := newTestDriver(t)
	ctx := testCtx(t)
	for _, p := range []*driver.InsertParams{
		{Kind: "a", Queue: "q", MaxAttempts: 1, Priority: 1<<31 + 3},
		{Kind: "a", Queue: "q", MaxAttempts: 1<<32 + 1},
	} {
		if res, err := d.Insert(ctx, nil, []*driver.InsertParams{p}); err == nil {
			t.Errorf("Insert(priority %d, max attempts %d) = job %+v, nil; want an error", p.Priority, p.MaxAttempts, res[0].Job)
		}
		if n, err := d.InsertBulk(ctx, []*driver.InsertParams{p}); err == nil {
			t.Errorf("InsertBulk(priority %d, max attempts %d) = %d, nil; want an error", p.Priority, p.MaxAttempts, n)
		}
	}
}
