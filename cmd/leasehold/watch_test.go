package main

import (
	"context"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/leasehold/leasehold/internal/testdb"
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
	waitFor(t, 30*time.Second, "the watcher's connection", func() bool { return terminate() > 0 })
	waitFor(t, 30*time.Second, "a failed pass", func() bool { return strings.Contains(w.stderr.String(), "pass failed") })
	time.Sleep(500 * time.Millisecond) // passes on a new connection
	if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("the watcher is gone after its connection was cut: %v\n%s", err, w.stderr.String())
	}
	if err := w.wait(t); err != nil {
		t.Fatalf("watch after a dropped connection: %v\n%s", err, w.stderr.String())
	}
}
