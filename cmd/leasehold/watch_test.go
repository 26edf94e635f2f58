package main

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/testdb"
	"github.com/leasehold/leasehold/sqlitedriver"
	"github.com/leasehold/leasehold/view"
)

// TestWatchOutlastsADroppedConnection: a stand-alone watcher whose
// database connections are cut (a restart, a failover, an idle timeout)
// says the pass failed and goes on with the next one, as the library's
// own watcher does, instead of exiting and leaving expired leases to no
// one.
func TestWatchOutlastsADroppedConnection(t *testing.T) {
	db := testdb.PostgresURL(t)
	ok(t, db, "migrate")
	app := fmt.Sprintf("lh_watch_%d", time.Now().UnixNano())
	w := start(t, db+"&application_name="+app, "watch", "--interval", "100ms", "--status-every", "0s")
	conn, err := pgx.Connect(context.Background(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	terminate := func() int {
		var n int
		err := conn.QueryRow(context.Background(),
			"SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE application_name = $1", app).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	// A cut during the start's schema check ends the command, as a
	// database gone at start does: cut only once the passes have begun.
	waitFor(t, 30*time.Second, "the watcher to start", func() bool {
		return strings.Contains(w.stdout.String(), "watching ")
	})
	// The first connection cut may be one the passes no longer use (the
	// schema check's, idle in the pool, which replaces it unseen): cut the
	// watcher's connections until a pass fails.
	waitFor(t, 30*time.Second, "a failed pass", func() bool {
		terminate()
		return strings.Contains(w.stderr.String(), "pass failed")
	})
	time.Sleep(500 * time.Millisecond) // passes on a new connection
	if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("the watcher is gone after its connection was cut: %v\n%s", err, w.stderr.String())
	}
	if err := w.wait(t); err != nil {
		t.Fatalf("watch after a dropped connection: %v\n%s", err, w.stderr.String())
	}
}

// TestWatchOutlastsAFailedPass: a pass that fails for real on SQLite (a
// trigger aborts the rescue's UPDATE) is reported and tried again at the
// next interval; once the failure is gone the next pass rescues the
// expired lease, and SIGTERM ends the watcher cleanly. Only --once turns
// the failed pass into exit 1.
func TestWatchOutlastsAFailedPass(t *testing.T) {
	path := testdb.SQLitePath(t)
	db := "sqlite:" + path
	ok(t, db, "migrate")
	id := killedHolding(t, db, "plain")[0]
	sqlDB, err := sql.Open("sqlite", path+"?_pragma=busy_timeout(10000)")
	if err != nil {
		t.Fatal(err)
	}
	defer sqlDB.Close()
	exec := func(q string) {
		t.Helper()
		if _, err := sqlDB.ExecContext(t.Context(), q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	exec(`CREATE TRIGGER fail_rescue BEFORE UPDATE ON leasehold_jobs BEGIN SELECT RAISE(ABORT, 'injected failure'); END`)
	waitFor(t, 30*time.Second, "the lease to expire", func() bool {
		var jobs []view.JobView
		okJSON(t, db, &jobs, "jobs", "stuck")
		return len(jobs) == 1 && jobs[0].Lease != nil && jobs[0].Lease.Expired
	})
	if r := lh(t, db, "watch", "--once"); r.code != 1 || !strings.Contains(r.stderr, "injected failure") {
		t.Errorf("watch --once, its pass failing: %s\nwant exit 1 and the error", r)
	}
	watcher := start(t, db, "watch", "--interval", "100ms", "--status-every", "0s")
	waitFor(t, 30*time.Second, "two failed passes", func() bool {
		select {
		case err := <-watcher.done:
			watcher.done <- err
			t.Fatalf("watch exited after a failed pass: %v\n%s", err, watcher.stderr.String())
		default:
		}
		return strings.Count(watcher.stderr.String(), "pass failed") >= 2
	})
	if j := showJob(t, db, id); j.Status != "processing" {
		t.Fatalf("job %d after failed passes: %s, want processing", id, j.Status)
	}
	exec(`DROP TRIGGER fail_rescue`)
	waitStatus(t, db, id, "pending")
	if err := watcher.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("the watcher is gone: %v\n%s", err, watcher.stderr.String())
	}
	if err := watcher.wait(t); err != nil {
		t.Fatalf("watch after failed passes: %v\n%s", err, watcher.stderr.String())
	}
	if out := watcher.stdout.String(); !strings.Contains(out, fmt.Sprintf("job %d (leasehold.sleep, queue plain)", id)) {
		t.Errorf("watch printed no rescue of job %d:\n%s", id, out)
	}
}

// TestWatchPassTimeout: a pass that hangs (here on a lock another
// session holds on the jobs table; in production, on a connection to a
// server that vanished without resetting it) is given up after
// --pass-timeout, reported, and tried again at the next interval, so the
// watcher moves the expired lease as soon as the database answers again.
func TestWatchPassTimeout(t *testing.T) {
	db := testdb.PostgresURL(t)
	ok(t, db, "migrate")
	id := killedHolding(t, db, "plain")[0]
	waitFor(t, 30*time.Second, "the lease to expire", func() bool {
		var jobs []view.JobView
		okJSON(t, db, &jobs, "jobs", "stuck")
		return len(jobs) == 1 && jobs[0].Lease != nil && jobs[0].Lease.Expired
	})
	conn, err := pgx.Connect(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	tx, err := conn.Begin(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if _, err := tx.Exec(t.Context(), "LOCK TABLE leasehold_jobs IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	watcher := start(t, db, "watch", "--interval", "100ms", "--pass-timeout", "500ms", "--status-every", "0s")
	waitFor(t, 30*time.Second, "a pass given up", func() bool {
		return strings.Contains(watcher.stderr.String(), "pass timed out after 500ms")
	})
	if err := tx.Rollback(t.Context()); err != nil {
		t.Fatal(err)
	}
	waitStatus(t, db, id, "pending")
	if err := watcher.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("the watcher is gone: %v\n%s", err, watcher.stderr.String())
	}
	if err := watcher.wait(t); err != nil {
		t.Fatalf("watch after a pass timed out: %v\n%s", err, watcher.stderr.String())
	}
}

// TestWatchPrintsWhatAFailedPassMoved: a pass moves expired leases in
// batches of 1,000, each committed on its own. When a later batch fails,
// the jobs of the earlier ones have moved all the same: watch prints
// them before it reports the failure.
func TestWatchPrintsWhatAFailedPassMoved(t *testing.T) {
	path := testdb.SQLitePath(t)
	db := "sqlite:" + path
	ok(t, db, "migrate")
	d := expiredLeases(t, path)
	// The second batch's first update fails: the first batch moved 1,000.
	if _, err := d.DB().ExecContext(t.Context(), `CREATE TRIGGER fail_second_batch BEFORE UPDATE ON leasehold_jobs
		WHEN (SELECT count(*) FROM leasehold_jobs WHERE status = 'pending') >= 1000
		BEGIN SELECT RAISE(ABORT, 'injected failure'); END`); err != nil {
		t.Fatal(err)
	}
	r := lh(t, db, "watch", "--once")
	if r.code != 1 || !strings.Contains(r.stderr, "injected failure") {
		t.Fatalf("watch --once, its second batch failing: %s\nwant exit 1 and the error", r)
	}
	if n := strings.Count(r.stdout, "-> pending"); n != 1000 {
		t.Errorf("watch --once printed %d moved jobs, want the first batch's 1000:\n%.500s", n, r.stdout)
	}
}

// expiredLeases opens the migrated SQLite file at path and leaves in it
// 1,001 jobs of queue plain whose leases, of owner gone, have expired:
// one more than a watcher's batch, so that a pass takes two. The driver
// is closed when the test ends.
func expiredLeases(t *testing.T, path string) *sqlitedriver.Driver {
	t.Helper()
	d, err := sqlitedriver.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	c, err := leasehold.NewClient(leasehold.Config{Driver: d})
	if err != nil {
		t.Fatal(err)
	}
	const jobs = 1001
	batch := make([]leasehold.InsertManyParams, jobs)
	for i := range batch {
		batch[i] = leasehold.InsertManyParams{Args: leasehold.RawArgs{KindName: "leasehold.sleep"},
			Opts: &leasehold.InsertOpts{Queue: "plain"}}
	}
	if _, err := c.InsertBulk(t.Context(), batch); err != nil {
		t.Fatal(err)
	}
	claimed, err := d.Claim(t.Context(), &driver.ClaimParams{Queue: "plain", Kinds: []string{"leasehold.sleep"},
		Owner: "gone", TTL: time.Millisecond, Limit: jobs})
	if err != nil || len(claimed) != jobs {
		t.Fatalf("claim = %d jobs, %v; want %d", len(claimed), err, jobs)
	}
	time.Sleep(50 * time.Millisecond) // the leases expire
	return d
}
