package chaos

import (
	"context"
	"database/sql"
	"io"
	"slices"
	"testing"
	"time"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/internal/testdb"
)

// TestHeldRowsPostgres holds two job rows in an open transaction of a session
// named like a worker, as a watcher frozen inside its rescue does, and
// checks that the harness finds exactly those rows, sees when they are
// free, and allows their reclaim that long and no other job's.
func TestHeldRowsPostgres(t *testing.T) {
	ctx := t.Context()
	url := testdb.PostgresURL(t)
	db, err := cli.Open(ctx, cli.Target{Dialect: cli.Postgres, URL: url}, cli.OpenOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if _, err := db.Driver.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	sqlDB, err := db.SQL()
	if err != nil {
		t.Fatal(err)
	}
	ids := insertJobs(ctx, t, sqlDB, 3)

	holder, err := sql.Open("pgx", url+"&application_name=w1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = holder.Close() })
	tx, err := holder.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tx.Rollback() })
	if _, err := tx.ExecContext(ctx, `UPDATE leasehold_jobs SET priority = priority WHERE id = ANY($1)`, ids[:2]); err != nil {
		t.Fatal(err)
	}

	h := &harness{db: db, o: Options{Out: io.Discard, TTL: time.Second, FreezeFor: 2 * time.Second}}
	idle := &freezeEvent{Worker: "w2"}
	h.readHeld(ctx, idle, "w2")
	if idle.Held != nil {
		t.Fatalf("a worker with no open transaction holds %v", idle.Held.Jobs)
	}
	f := &freezeEvent{Worker: "w1", For: 2 * time.Second}
	h.readHeld(ctx, f, "w1")
	if f.Held == nil || !slices.Equal(slices.Sorted(slices.Values(f.Held.Jobs)), ids[:2]) {
		t.Fatalf("held rows %+v, want jobs %v", f.Held, ids[:2])
	}
	const hold = 300 * time.Millisecond
	time.Sleep(hold)
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	h.sched.freezes = []*freezeEvent{f}
	h.heldSettled()
	hr := f.Held
	if got := hr.FreeUS - hr.AtUS; got < hold.Microseconds() || got > f.For.Microseconds() {
		t.Fatalf("rows free %d µs after the freeze, want between %d and %d", got, hold.Microseconds(), f.For.Microseconds())
	}

	death := hr.AtUS - 2*time.Second.Microseconds() // its lease ran out 1 s before the freeze
	claimed := hr.FreeUS + 1
	if got, want := h.heldExtra(ids[0], death, claimed), hr.FreeUS-(death+time.Second.Microseconds()); got != want {
		t.Errorf("extra for a held job %d µs, want %d", got, want)
	}
	if got := h.heldExtra(ids[2], death, claimed); got != 0 {
		t.Errorf("extra for a job not held %d µs, want 0", got)
	}
	if got := h.heldExtra(ids[0], hr.AtUS+1, claimed); got != 0 {
		t.Errorf("extra for a death after the freeze %d µs, want 0", got)
	}
}

// insertJobs inserts n pending jobs and returns their ids in order.
func insertJobs(ctx context.Context, t *testing.T, db *sql.DB, n int) []int64 {
	t.Helper()
	var ids []int64
	for range n {
		var id int64
		if err := db.QueryRowContext(ctx, `INSERT INTO leasehold_jobs (kind, queue, args, max_attempts) VALUES ('held', 'default', '{}', 1) RETURNING id`).Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return ids
}
