package pgdriver

import (
	"encoding/json"
	"testing"

	"github.com/jackc/pgx/v5"

	leasehold "github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// TestClaimAfterSkipsHeldEntries checks what the claim cursor is for:
// while a transaction holds a snapshot older than a queue's claimed jobs,
// their entries stay in leasehold_jobs_ready_idx in front of the pending
// jobs, and a full claim reads past every one of them; a claim after the
// last claimed key reads a few pages whatever their number. It also checks
// that the bound claims the jobs after the key, and only those.
func TestClaimAfterSkipsHeldEntries(t *testing.T) {
	d, _ := newTestDriver(t)
	ctx := testCtx(t)
	const claimed, fresh = 20_000, 10
	insertBulk(t, d, "q", claimed)
	held, err := d.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = held.Rollback(ctx) }()
	if _, err := held.Exec(ctx, "SELECT txid_current()"); err != nil {
		t.Fatal(err)
	}
	var last *leasehold.JobRow
	for got := 0; got < claimed; {
		jobs, err := d.Claim(ctx, &driver.ClaimParams{Queue: "q", Kinds: []string{"k"}, Owner: "w", TTL: leaseTTL, Limit: 5000})
		if err != nil || len(jobs) == 0 {
			t.Fatalf("Claim: %d jobs, %v", len(jobs), err)
		}
		got, last = got+len(jobs), jobs[len(jobs)-1]
	}
	want := insertJobs(t, d, "q", fresh)
	key := driver.KeyOf(last)
	args := []any{"w2", int64(leaseTTL.Microseconds()), "q", []string{"k"}, 100}
	for name, stmts := range map[string]claimStatements{"take over": d.claims.takeOver, "pending": d.claims.pending} {
		full := claimBuffers(t, d, stmts.full, args...)
		after := claimBuffers(t, d, stmts.after, append(args, key.Priority, key.RunAt, key.ID)...)
		t.Logf("%s: pages read by the pending search of a claim of %d jobs behind %d held entries: full %d, after the key %d", name, fresh, claimed, full, after)
		if after*10 > full {
			t.Errorf("%s: a claim after the key read %d pages, a full claim %d: want at most a tenth", name, after, full)
		}
	}
	jobs, err := d.Claim(ctx, &driver.ClaimParams{Queue: "q", Kinds: []string{"k"}, Owner: "w2", TTL: leaseTTL, Limit: 100, After: &key})
	if err != nil || len(jobs) != fresh || jobs[0].ID != want[0].ID {
		t.Fatalf("Claim after %+v: %d jobs, %v; want the %d inserted since, from id %d", key, len(jobs), err, fresh, want[0].ID)
	}
	before := driver.KeyOf(want[fresh-1])
	if _, err := d.pool.Exec(ctx, "UPDATE leasehold_jobs SET status = 'pending', lease_owner = NULL WHERE id = $1", want[0].ID); err != nil {
		t.Fatal(err)
	}
	if jobs, err := d.Claim(ctx, &driver.ClaimParams{Queue: "q", Kinds: []string{"k"}, Owner: "w2", TTL: leaseTTL, Limit: 100, After: &before}); err != nil || len(jobs) != 0 {
		t.Errorf("Claim after the last key: %d jobs, %v; want none (the pending job sorts before it)", len(jobs), err)
	}
}

// claimBuffers runs claim sql under EXPLAIN (ANALYZE, BUFFERS), with a
// generic plan, in a transaction it rolls back, and returns the shared buffers its search for
// pending jobs touched (the pending CTE, without the update).
func claimBuffers(t *testing.T, d *Driver, sql string, args ...any) int {
	t.Helper()
	ctx := testCtx(t)
	tx, err := d.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	// The plan a prepared statement settles on after its first runs.
	if _, err := tx.Exec(ctx, "SET LOCAL plan_cache_mode = force_generic_plan"); err != nil {
		t.Fatal(err)
	}
	var out []byte
	if err := tx.QueryRow(ctx, "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) "+sql, args...).Scan(&out); err != nil {
		t.Fatalf("EXPLAIN ANALYZE: %v", err)
	}
	var plans []struct{ Plan planNode }
	if err := json.Unmarshal(out, &plans); err != nil || len(plans) != 1 {
		t.Fatalf("EXPLAIN output %s: %v", out, err)
	}
	n := plans[0].Plan.find("CTE pending")
	if n == nil {
		t.Fatalf("no CTE pending in the plan: %s", out)
	}
	return n.Hit + n.Read
}

// planNode is a node of a JSON plan, with its buffers.
type planNode struct {
	Name  string     `json:"Subplan Name"`
	Hit   int        `json:"Shared Hit Blocks"`
	Read  int        `json:"Shared Read Blocks"`
	Plans []planNode `json:"Plans"`
}

// find returns the node named name in the tree under n, or nil.
func (n *planNode) find(name string) *planNode {
	if n.Name == name {
		return n
	}
	for i := range n.Plans {
		if f := n.Plans[i].find(name); f != nil {
			return f
		}
	}
	return nil
}
