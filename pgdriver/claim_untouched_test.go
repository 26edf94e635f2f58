package pgdriver

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	leasehold "github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// TestCursorClaimLeavesOutRowsClaimedSinceItsSnapshot checks
// untouchedCond: a cursor claim whose snapshot predates another claim's
// commit leaves that claim's row out without locking it. The claim runs
// in a REPEATABLE READ transaction, whose snapshot is taken before the
// other claim commits: without the condition, its FOR UPDATE meets the
// row the other claim updated and fails the transaction (in READ
// COMMITTED it would lock the row's newest version, leave it out, and hold
// the lock until it commits).
func TestCursorClaimLeavesOutRowsClaimedSinceItsSnapshot(t *testing.T) {
	d, _ := newTestDriver(t)
	ctx := testCtx(t)
	jobs := insertJobs(t, d, "q", 2)
	rr, err := d.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.RepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = rr.Rollback(ctx) }()
	if _, err := rr.Exec(ctx, "SELECT count(*) FROM leasehold_jobs"); err != nil { // takes the snapshot
		t.Fatal(err)
	}
	first := claimOne(t, d, "q", "w1", leaseTTL)
	if first.ID != jobs[0].ID {
		t.Fatalf("claimed job %d, want the first, %d", first.ID, jobs[0].ID)
	}
	key := driver.KeyOf(first)
	key.ID-- // the cursor just before the first job
	got, err := collect(ctx, pgxQuerier{rr}, newJobScan(&d.names).scan, d.claims.pending.after,
		"w2", micros(leaseTTL), "q", []string{"k"}, 1, key.Priority, key.RunAt, key.ID)
	if err != nil {
		t.Fatalf("cursor claim with a snapshot from before the other claim's commit: %v", err)
	}
	if len(got) != 1 || got[0].ID != jobs[1].ID {
		t.Fatalf("cursor claim: %d jobs (%v); want the second job, %d", len(got), ids(got), jobs[1].ID)
	}
	wait, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if _, err := d.pool.Exec(wait, "UPDATE leasehold_jobs SET heartbeat_at = now() WHERE id = $1", first.ID); err != nil {
		t.Fatalf("update of the job the other claim holds, while the cursor claim is open: %v (the claim left a lock on it)", err)
	}
}

// TestCursorClaimTakesRowsOfEndedTransactions checks that untouchedCond
// leaves out only what transactions still running, or begun after the
// snapshot, touched: a pending row whose xmax a rolled-back lock, a
// committed lock or a rolled-back update left is claimed as any other.
func TestCursorClaimTakesRowsOfEndedTransactions(t *testing.T) {
	d, _ := newTestDriver(t)
	ctx := testCtx(t)
	jobs := insertJobs(t, d, "q", 3)
	touch := []struct {
		sql    string
		commit bool
	}{
		{"SELECT 1 FROM leasehold_jobs WHERE id = $1 FOR UPDATE", false},
		{"SELECT 1 FROM leasehold_jobs WHERE id = $1 FOR SHARE", true},
		{"UPDATE leasehold_jobs SET status = 'processing' WHERE id = $1", false},
	}
	for i, tc := range touch {
		tx, err := d.pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(ctx, tc.sql, jobs[i].ID); err != nil {
			t.Fatal(err)
		}
		end := tx.Rollback
		if tc.commit {
			end = tx.Commit
		}
		if err := end(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var marked int
	if err := d.pool.QueryRow(ctx, "SELECT count(*) FROM leasehold_jobs WHERE xmax <> '0'::xid AND status = 'pending'").Scan(&marked); err != nil {
		t.Fatal(err)
	}
	if marked != len(touch) {
		t.Fatalf("%d pending rows with an xmax, want %d: the test no longer sets up what it checks", marked, len(touch))
	}
	key := driver.KeyOf(jobs[0])
	key.ID--
	got, err := d.Claim(ctx, &driver.ClaimParams{Queue: "q", Kinds: []string{"k"}, Owner: "w", TTL: leaseTTL, Limit: 10, After: &key})
	if err != nil || len(got) != len(jobs) {
		t.Fatalf("cursor claim: %v, %v; want all %d jobs", ids(got), err, len(jobs))
	}
}

// TestUntouchedOf checks untouchedCond's arithmetic on literal ids and
// snapshots: the widening of a 32-bit id to the nearest 64-bit one across
// an epoch boundary, what pg_visible_in_snapshot then says of it, and that
// an id far ahead of the snapshot (a multixact id read as a transaction
// id) is not left out.
func TestUntouchedOf(t *testing.T) {
	d, _ := newTestDriver(t)
	ctx := testCtx(t)
	sql := `SELECT ` + untouchedOf(`$1::text::xid`, `$2::pg_snapshot`, `pg_snapshot_xmax($2::pg_snapshot)::text::bigint`)
	const epoch1 = "4294967396:4294967496:4294967400" // epoch 1: xmin 100, xmax 200, 104 running
	for _, tc := range []struct {
		xid, snap string
		untouched bool
	}{
		{"0", epoch1, true},
		{"150", epoch1, true},
		{"104", epoch1, false},
		{"250", epoch1, false},
		{"50", epoch1, true},
		{"4294967290", epoch1, true}, // epoch 0
		{"3", "4294967290:4294967300:", true},
		{"4294967295", "4294967290:4294967300:", true},
		{"5", "4294967290:4294967300:", false},
		{"4294967290", "100:200:", true}, // before the first epoch
		{"150", "100:200:150", false},
		{"199", "100:200:150", true},
		{"16777415", "100:200:", false},  // xmax + 2^24 - 1
		{"16777416", "100:200:", true},   // xmax + 2^24: not a transaction id
		{"4000000000", "100:200:", true}, // far ahead, or before the first epoch
	} {
		var untouched bool
		if err := d.pool.QueryRow(ctx, sql, tc.xid, tc.snap).Scan(&untouched); err != nil {
			t.Fatalf("xid %s in %s: %v", tc.xid, tc.snap, err)
		}
		if untouched != tc.untouched {
			t.Errorf("xid %s in snapshot %s: untouched %v, want %v", tc.xid, tc.snap, untouched, tc.untouched)
		}
	}
}

// ids lists the ids of jobs.
func ids(jobs []*leasehold.JobRow) []int64 {
	out := make([]int64, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}

// TestCursorClaimWithoutSnapshotFuncs checks the fallback for servers that
// lack what untouchedCond reads: a cursor claim the server refuses for an
// undefined function runs again without the condition, and so do the
// driver's cursor claims after it. A claim refused for a column the
// schema lacks keeps the condition: the claim without it fails too.
func TestCursorClaimWithoutSnapshotFuncs(t *testing.T) {
	d, _ := newTestDriver(t)
	ctx := testCtx(t)
	jobs := insertJobs(t, d, "q", 2)
	key := driver.KeyOf(jobs[0])
	key.ID--
	params := &driver.ClaimParams{Queue: "q", Kinds: []string{"k"}, Owner: "w", TTL: leaseTTL, Limit: 10, After: &key}
	rename := func(from, to string) {
		t.Helper()
		if _, err := d.pool.Exec(ctx, "ALTER TABLE leasehold_jobs RENAME COLUMN "+from+" TO "+to); err != nil {
			t.Fatal(err)
		}
	}
	rename("claimed_at", "claimed_at_gone")
	if _, err := d.Claim(ctx, params); !lacksSnapshotFuncs(err) {
		t.Fatalf("cursor claim without claimed_at: %v, want an undefined column", err)
	}
	rename("claimed_at_gone", "claimed_at")
	if d.plainCursor.Load() {
		t.Fatal("a claim refused for a column of the schema switched the cursor claims off the condition")
	}
	d.claims.pending.after = claimWith(false, snapCTE, cursorCond+` AND leasehold_no_such_function()`)
	got, err := d.Claim(ctx, params)
	if err != nil || len(got) != len(jobs) {
		t.Fatalf("cursor claim on a server without the function: %v, %v; want both jobs", ids(got), err)
	}
	if !d.plainCursor.Load() {
		t.Error("the driver's next cursor claims still use the statement the server refused")
	}
}
