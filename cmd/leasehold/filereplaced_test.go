package main

import (
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
	began := time.Now()
	err := w.wait(t)
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("worker exit: %v; want exit code 1\nstderr:\n%s", err, w.stderr.String())
	}
	if took := time.Since(began); took > 15*time.Second {
		t.Errorf("worker took %v to stop after its file was replaced", took)
	}
	if logs := w.stderr.String(); !strings.Contains(logs, "another file than the one this process opened") {
		t.Errorf("worker's stderr does not say its file was replaced:\n%s", logs)
	}
}
