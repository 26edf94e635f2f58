package pgdriver

import (
	"slices"
	"testing"

	"github.com/jackc/pgx/v5"

	leasehold "github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// TestStorageParameters checks the storage parameters of migrations 009
// and 012: the tables a job writes to vacuumed and analyzed by a count of
// rows rather than a fraction of the table.
func TestStorageParameters(t *testing.T) {
	d, _ := newTestDriver(t)
	ctx := testCtx(t)
	byCount := []string{"autovacuum_vacuum_scale_factor=0", "autovacuum_vacuum_threshold=10000",
		"autovacuum_vacuum_insert_scale_factor=0", "autovacuum_vacuum_insert_threshold=10000",
		"autovacuum_analyze_scale_factor=0", "autovacuum_analyze_threshold=10000"}
	for _, table := range []string{"leasehold_jobs", "leasehold_attempts", "leasehold_job_uuids"} {
		var got []string
		if err := d.pool.QueryRow(ctx, "SELECT coalesce(reloptions, '{}') FROM pg_class WHERE oid = $1::regclass",
			table).Scan(&got); err != nil {
			t.Fatalf("%s: %v", table, err)
		}
		for _, o := range byCount {
			if !slices.Contains(got, o) {
				t.Errorf("%s: reloptions %v lack %s", table, got, o)
			}
		}
	}
}

// TestJobUpdatesStayOnTheirPage checks what migration 011's fillfactor
// is for: the claim and the completion of a job write its new row
// versions on the page it was inserted on, not on another one (which
// costs a page search and a lock record for the old version in the WAL).
// With fillfactor 50 a batch of 2,000 moves 296 of its rows, without it
// all of them.
func TestJobUpdatesStayOnTheirPage(t *testing.T) {
	d, _ := newTestDriver(t)
	ctx := testCtx(t)
	const n = 2000
	insertBulk(t, d, "q", n)
	pages := func() map[int64]int64 {
		rows, err := d.pool.Query(ctx, "SELECT id, (ctid::text::point)[0]::bigint FROM leasehold_jobs")
		if err != nil {
			t.Fatal(err)
		}
		got, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (kv [2]int64, err error) {
			err = r.Scan(&kv[0], &kv[1])
			return kv, err
		})
		if err != nil {
			t.Fatal(err)
		}
		m := make(map[int64]int64, len(got))
		for _, kv := range got {
			m[kv[0]] = kv[1]
		}
		return m
	}
	inserted := pages()
	jobs, err := d.Claim(ctx, &driver.ClaimParams{Queue: "q", Kinds: []string{"k"}, Owner: "w", TTL: leaseTTL, Limit: n})
	if err != nil || len(jobs) != n {
		t.Fatalf("Claim: %d jobs, %v", len(jobs), err)
	}
	done := make([]*driver.FinishParams, n)
	for i, j := range jobs {
		done[i] = &driver.FinishParams{ID: j.ID, Owner: "w", Attempt: j.Attempt, Transition: transition(leasehold.OutcomeCompleted, "")}
	}
	if ids, err := d.Finish(ctx, nil, done); err != nil || len(ids) != n {
		t.Fatalf("Finish: %d, %v", len(ids), err)
	}
	moved := 0
	for id, page := range pages() {
		if inserted[id] != page {
			moved++
		}
	}
	if moved > n/4 {
		t.Errorf("%d of %d jobs left the page they were inserted on after their claim and completion; want at most a quarter (all of them without the fillfactor)", moved, n)
	}
}
