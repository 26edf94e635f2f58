package main

import (
	"bytes"
	"context"
	sqldriver "database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"modernc.org/sqlite"

	"github.com/leasehold/leasehold/internal/testdb"
)

// interruptWatch is what the SQLite function watch_test_interrupt calls:
// the cancel of the watch run by TestWatchInterruptedPrintsMovedJobs.
var interruptWatch struct {
	sync.Mutex
	cancel context.CancelFunc
}

// registerInterrupt registers, once for the test binary, the SQLite
// function watch_test_interrupt(), which cancels the running watch (as
// Ctrl-C does) and fails the statement that called it.
var registerInterrupt = sync.OnceValue(func() error {
	return sqlite.RegisterScalarFunction("watch_test_interrupt", 0,
		func(*sqlite.FunctionContext, []sqldriver.Value) (sqldriver.Value, error) {
			interruptWatch.Lock()
			defer interruptWatch.Unlock()
			if interruptWatch.cancel != nil {
				interruptWatch.cancel()
			}
			return nil, errors.New("interrupted")
		})
})

// TestWatchInterruptedPrintsMovedJobs: a pass moves expired leases in
// batches of 1,000, each committed on its own. A watcher interrupted
// (Ctrl-C, SIGTERM) while a later batch runs has moved the earlier
// batches' jobs all the same: it prints them before it exits.
func TestWatchInterruptedPrintsMovedJobs(t *testing.T) {
	t.Run("sqlite", testWatchInterruptedSQLite)
	t.Run("postgres", testWatchInterruptedPostgres)
}

func testWatchInterruptedSQLite(t *testing.T) {
	if err := registerInterrupt(); err != nil {
		t.Fatal(err)
	}
	path := testdb.SQLitePath(t)
	db := "sqlite:" + path
	ok(t, db, "migrate")
	d := expiredLeases(t, path)
	// The watcher is interrupted as the second batch begins, once the
	// first batch has moved 1,000 jobs.
	if _, err := d.DB().ExecContext(t.Context(), `CREATE TRIGGER interrupt_second_batch BEFORE UPDATE ON leasehold_jobs
		WHEN (SELECT count(*) FROM leasehold_jobs WHERE status = 'pending') >= 1000
		BEGIN SELECT watch_test_interrupt(); END`); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	interruptWatch.Lock()
	interruptWatch.cancel = cancel
	interruptWatch.Unlock()
	defer func() {
		interruptWatch.Lock()
		interruptWatch.cancel = nil
		interruptWatch.Unlock()
	}()
	var out, errb bytes.Buffer
	code := run(ctx, []string{"--db", db, "watch", "--status-every", "0s"}, &out, &errb)
	checkInterruptedWatch(t, code, out.String(), errb.String())
}

func testWatchInterruptedPostgres(t *testing.T) {
	db := testdb.PostgresURL(t)
	ok(t, db, "migrate")
	ctx := t.Context()
	conn, err := pgx.Connect(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	for _, q := range []string{
		`INSERT INTO leasehold_jobs (kind, queue, max_attempts, args, status, attempt, lease_owner, lease_until, claimed_at, uuid)
		 SELECT 'k', 'default', 20, '{}', 'processing', 1, 'gone', now() - interval '1 hour', now() - interval '2 hours', gen_random_uuid()
		 FROM generate_series(1, 1001)`,
		// The second batch's UPDATE hangs until the watcher is
		// interrupted, which cancels it.
		`CREATE SEQUENCE watch_test_updates`,
		`CREATE FUNCTION watch_test_slow() RETURNS trigger LANGUAGE plpgsql AS $$
		 BEGIN IF nextval('watch_test_updates') = 2 THEN PERFORM pg_sleep(30); END IF; RETURN NULL; END $$`,
		`CREATE TRIGGER watch_test_slow AFTER UPDATE ON leasehold_jobs FOR EACH STATEMENT EXECUTE FUNCTION watch_test_slow()`,
	} {
		if _, err := conn.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var out, errb bytes.Buffer
	done := make(chan int)
	app := fmt.Sprintf("lh_watch_interrupt_%d", time.Now().UnixNano())
	go func() {
		done <- run(rctx, []string{"--db", db + "&application_name=" + app, "watch", "--status-every", "0s"}, &out, &errb)
	}()
	waitFor(t, 30*time.Second, "the first batch to commit", func() bool {
		var n, sleeping int
		err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM leasehold_jobs WHERE status = 'pending'),
			(SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND wait_event = 'PgSleep')`, app).Scan(&n, &sleeping)
		if err != nil {
			t.Fatal(err)
		}
		return n >= 1000 && sleeping > 0
	})
	cancel() // Ctrl-C, while the second batch runs
	checkInterruptedWatch(t, <-done, out.String(), errb.String())
}

// checkInterruptedWatch checks that an interrupted watch exited 0 and
// printed the 1,000 jobs its first batch moved.
func checkInterruptedWatch(t *testing.T, code int, stdout, stderr string) {
	t.Helper()
	if n := strings.Count(stdout, "-> pending"); code != 0 || n != 1000 {
		t.Errorf("interrupted watch: exit %d, printed %d moved jobs; want exit 0 and the first batch's 1000\nstdout: %.300s\nstderr: %s",
			code, n, stdout, stderr)
	}
}
