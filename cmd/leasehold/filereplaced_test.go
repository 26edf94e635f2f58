package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestWorkStopsWhenFileReplaced: `leasehold work` on an SQLite file that
// is replaced under it (a backup restored over it) stops on its own with
// exit code 1 and says why, instead of running on the old file, whose
// jobs and writes no other process sees.
func TestWorkStopsWhenFileReplaced(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "live.db")
	db := "sqlite:" + path
	ok(t, db, "migrate")
	restored := "sqlite:" + filepath.Join(dir, "restored.db")
	ok(t, restored, "migrate")
	id := enqueueID(t, db, "leasehold.sleep", "--args", `{"duration":"1ms"}`)
	w := start(t, db, "work", "--kind", "leasehold.sleep", "--poll-interval", "50ms", "--log-level", "warn")
	waitStatus(t, db, id, "completed")
	if err := os.Rename(filepath.Join(dir, "restored.db"), path); err != nil {
		t.Fatal(err)
	}
	waitExit1(t, w, 15*time.Second, "its file was replaced")
	if logs := w.stderr.String(); !strings.Contains(logs, "another file than the one this process opened") {
		t.Errorf("worker's stderr does not say its file was replaced:\n%s", logs)
	}
}

// waitExit1 waits for the worker w to exit, and fails t unless it exits
// with code 1 within limit of the call, after what happened.
func waitExit1(t *testing.T, w *background, limit time.Duration, after string) {
	t.Helper()
	began := time.Now()
	err := w.wait(t)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("worker exit: %v; want exit code 1\nstderr:\n%s", err, w.stderr.String())
	}
	if took := time.Since(began); took > limit {
		t.Errorf("worker took %v to stop after %s", took, after)
	}
}

// TestWorkStopsAtOnceWhenFileGoneWithJobsRunning: a worker whose file is
// removed while its handlers run cuts them off at once rather than after
// its shutdown timeout (no outcome can be written), exits 1, and its
// summary says the writes were not taken.
func TestWorkStopsAtOnceWhenFileGoneWithJobsRunning(t *testing.T) {
	path := filepath.Join(t.TempDir(), "gone.db")
	db := "sqlite:" + path
	ok(t, db, "migrate")
	id := enqueueID(t, db, "leasehold.sleep", "--args", `{"duration":"1m"}`)
	w := start(t, db, "work", "--kind", "leasehold.sleep", "--poll-interval", "50ms", "--ttl", "3s",
		"--shutdown-timeout", "1m", "--log-level", "error")
	waitStatus(t, db, id, "processing")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	waitExit1(t, w, 20*time.Second, "its file was removed (shutdown timeout 1m, lease TTL 3s)")
	if out := w.stdout.String(); !strings.Contains(out, "could not release 1 lease or record its outcome (the database did not take the write)") {
		t.Errorf("worker's summary:\n%s", out)
	}
}

// TestWorkStopsOnCorruptFile: a worker whose SQLite file gets damaged
// while it works (pages overwritten in place) stops on its own with exit
// code 1 and says the file is corrupt, at the first statement that reads
// a damaged page, instead of logging warnings forever.
func TestWorkStopsOnCorruptFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "live.db")
	db := "sqlite:" + path
	ok(t, db, "migrate")
	var ids []int64
	for range 20 {
		ids = append(ids, enqueueID(t, db, "leasehold.sleep", "--args", `{"duration":"300ms","pad":"`+strings.Repeat("x", 2000)+`"}`))
	}
	w := start(t, db, "work", "--kind", "leasehold.sleep", "--concurrency", "2", "--poll-interval", "50ms", "--log-level", "warn")
	waitStatus(t, db, ids[0], "completed")
	corruptTail(t, path)
	err := w.wait(t)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("worker exit: %v; want exit code 1\nstderr:\n%s", err, w.stderr.String())
	}
	if logs := w.stderr.String(); !strings.Contains(logs, "is corrupt") {
		t.Errorf("worker's stderr does not say the file is corrupt:\n%s", logs)
	}
}

// corruptTail overwrites the second half of the file at path in place
// (the same file, so no identity check fires): where the last rows went.
func corruptTail(t *testing.T, path string) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	half := fi.Size() / 2 / 4096 * 4096
	if _, err := f.WriteAt(bytes.Repeat([]byte{0xA5}, int(fi.Size()-half)), half); err != nil {
		t.Fatal(err)
	}
}
