package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/internal/testdb"
	"github.com/leasehold/leasehold/view"
)

// newSQLite returns a migrated SQLite database of the test's own.
func newSQLite(t *testing.T) string {
	t.Helper()
	db := "sqlite:" + testdb.SQLitePath(t)
	ok(t, db, "migrate")
	return db
}

// TestWorkStopsGracefullyOnSIGHUP: the hangup a worker gets when the
// terminal or ssh session that started it closes stops it as SIGTERM does:
// its running job's lease is released at once (pending, not charged), and
// it exits 0, where Go's default for SIGHUP killed it and left the lease
// to expire.
func TestWorkStopsGracefullyOnSIGHUP(t *testing.T) {
	db := newSQLite(t)
	id := enqueueID(t, db, "leasehold.sleep", "--args", `{"duration":"1m"}`)
	w := start(t, db, "work", "--poll-interval", "50ms", "--shutdown-timeout", "100ms", "--json")
	waitStatus(t, db, id, "processing")
	if err := w.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if err := w.wait(t); err != nil {
		t.Fatalf("worker after SIGHUP: %v\n%s", err, w.stderr.String())
	}
	var stats view.StatsView
	if err := json.Unmarshal(w.stdout.Bytes(), &stats); err != nil || stats.Released != 1 {
		t.Errorf("worker stats = %+v, %v; want 1 released", stats, err)
	}
	if !strings.Contains(w.stderr.String(), `because="hangup signal received"`) {
		t.Errorf("the worker's log does not say the hangup stopped it:\n%s", w.stderr.String())
	}
	if j := showJob(t, db, id); j.Status != "pending" {
		t.Errorf("job of a worker stopped by SIGHUP: %s, want pending at once", j.Status)
	}
}

// TestWorkSecondSignalExitsAtOnce: a second SIGTERM while the first one's
// graceful stop waits for a running job ends the process at once, by the
// signal, instead of being swallowed for the whole shutdown timeout.
func TestWorkSecondSignalExitsAtOnce(t *testing.T) {
	db := newSQLite(t)
	id := enqueueID(t, db, "leasehold.sleep", "--args", `{"duration":"1m"}`)
	w := start(t, db, "work", "--poll-interval", "50ms", "--shutdown-timeout", "1m")
	waitStatus(t, db, id, "processing")
	took, err := signalTwice(t, w, syscall.SIGTERM)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGTERM {
		t.Fatalf("worker after a second SIGTERM: %v, want killed by it\n%s", err, w.stderr.String())
	}
	if took > 10*time.Second {
		t.Errorf("the second SIGTERM took %v to end the worker, want at once (its shutdown timeout is 1m)", took)
	}
}

// signalTwice sends sig to the worker, waits for its graceful stop to
// begin, sends sig again and returns how long after the second signal
// the process ended, and how.
func signalTwice(t *testing.T, w *background, sig syscall.Signal) (time.Duration, error) {
	t.Helper()
	if err := w.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "the graceful stop to begin", func() bool {
		return strings.Contains(w.stderr.String(), "stopping: running jobs may finish")
	})
	sent := time.Now()
	if err := w.cmd.Process.Signal(sig); err != nil {
		t.Fatal(err)
	}
	err := w.wait(t)
	return time.Since(sent), err
}

// TestWorkSecondSIGINTWhenStartedIgnoringIt: a worker started with
// SIGINT ignored (nohup, or `&` in a script) stops gracefully at the first
// SIGINT and exits at once, 130, at the second, instead of waiting out its
// shutdown timeout.
func TestWorkSecondSIGINTWhenStartedIgnoringIt(t *testing.T) {
	db := newSQLite(t)
	id := enqueueID(t, db, "leasehold.sleep", "--args", `{"duration":"1m"}`)
	w := startCmd(t, func(ctx context.Context) *exec.Cmd {
		cmd := exec.CommandContext(ctx, "sh", "-c", `trap "" INT; exec "$0" "$@"`, binary,
			"--db", db, "work", "--poll-interval", "50ms", "--shutdown-timeout", "1m")
		cmd.Env = baseEnv()
		return cmd
	})
	waitStatus(t, db, id, "processing")
	took, err := signalTwice(t, w, syscall.SIGINT)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 130 {
		t.Fatalf("worker after a second SIGINT: %v, want exit status 130\n%s", err, w.stderr.String())
	}
	if took > 10*time.Second {
		t.Errorf("the second SIGINT took %v to end the worker, want at once (its shutdown timeout is 1m)", took)
	}
}

// TestWorkStoppedBeforeStart: a SIGTERM while the worker waits for the
// database (here for an SQLite write lock another connection holds, as
// it migrates) is a stop asked for, not a failure: exit 0, and stderr
// says it stopped before it started.
func TestWorkStoppedBeforeStart(t *testing.T) {
	path := testdb.SQLitePath(t)
	target, err := cli.ParseTarget("sqlite:" + path)
	if err != nil {
		t.Fatal(err)
	}
	h, err := cli.Open(t.Context(), target, cli.OpenOptions{Create: true}) // a new file, no tables yet
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = h.Close() })
	holder, err := h.SQL()
	if err != nil {
		t.Fatal(err)
	}
	tx, err := holder.BeginTx(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(t.Context(), `CREATE TABLE held (x)`); err != nil { // takes the write lock
		t.Fatal(err)
	}
	w := start(t, "sqlite:"+path, "work", "--log-level", "error")
	time.Sleep(500 * time.Millisecond) // the worker is waiting for the lock, its signal handler set
	if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := w.wait(t); err != nil {
		t.Fatalf("worker stopped while it waited for the database: %v, want exit 0\n%s", err, w.stderr.String())
	}
	if !strings.Contains(w.stderr.String(), "terminated signal received before the worker started: stopped") {
		t.Errorf("stderr does not say the worker stopped before it started:\n%s", w.stderr.String())
	}
}

// TestWorkStopsGracefullyWithItsLogGone: a worker whose log reader went
// away (a "| head" that exited) still stops gracefully on SIGTERM: a
// write to the closed pipe does not kill it by SIGPIPE, its running job
// is released at once, and it exits 0.
func TestWorkStopsGracefullyWithItsLogGone(t *testing.T) {
	db := newSQLite(t)
	id := enqueueID(t, db, "leasehold.sleep", "--args", `{"duration":"1m"}`)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := command(ctx, "", nil, "--db", db, "work", "--poll-interval", "50ms", "--shutdown-timeout", "100ms")
	out, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdout = cmd.Stderr // the summary goes down the same closed pipe
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(out).ReadString('\n'); err != nil { // the first log line, then nobody reads
		t.Fatal(err)
	}
	_ = out.Close()
	waitStatus(t, db, id, "processing")
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("worker with its log gone, after SIGTERM: %v, want exit 0", err)
	}
	if j := showJob(t, db, id); j.Status != "pending" {
		t.Errorf("job of the worker: %s, want pending at once (released)", j.Status)
	}
}

// TestEnqueueStdinStopsOnSIGINT: `enqueue --args -` waiting on a standard
// input that never closes (a producer that hangs) ends on the first
// SIGINT, with exit code 1 and a line saying what it was reading, and
// inserts nothing.
func TestEnqueueStdinStopsOnSIGINT(t *testing.T) {
	db := newSQLite(t)
	pr, pw, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer pw.Close()
	b := startCmd(t, func(ctx context.Context) *exec.Cmd {
		c := command(ctx, "", nil, "--db", db, "enqueue", "foo", "--args", "-")
		c.Stdin = pr
		return c
	})
	time.Sleep(500 * time.Millisecond)
	if err := b.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-b.done:
		b.done <- err // for the cleanup's wait
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 1 || !strings.Contains(b.stderr.String(), "--args: read standard input") {
			t.Errorf("enqueue after SIGINT: %v, stderr %q; want exit 1 naming the read", err, b.stderr.String())
		}
	case <-time.After(10 * time.Second):
		t.Fatalf("enqueue --args - still running 10 s after SIGINT (stderr %q)", b.stderr.String())
	}
	if r := runIn(t, "", nil, "--db", db, "jobs", "list", "--json"); strings.Contains(r.stdout, `"kind"`) {
		t.Errorf("a job was inserted: %s", r.stdout)
	}
}
