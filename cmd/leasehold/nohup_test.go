package main

import (
	"context"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// TestWorkStartedUnderNohupIgnoresSIGHUP: a worker started with SIGHUP
// ignored, as nohup starts it, keeps running when its session hangs up
// (catching SIGHUP would undo what nohup is for), and still stops on
// SIGTERM.
func TestWorkStartedUnderNohupIgnoresSIGHUP(t *testing.T) {
	db := newSQLite(t)
	id := enqueueID(t, db, "leasehold.sleep", "--args", `{"duration":"1m"}`)
	w := startCmd(t, func(ctx context.Context) *exec.Cmd {
		cmd := exec.CommandContext(ctx, "sh", "-c", `trap "" HUP; exec "$0" "$@"`, binary,
			"--db", db, "work", "--poll-interval", "50ms", "--shutdown-timeout", "100ms")
		cmd.Env = baseEnv()
		return cmd
	})
	waitStatus(t, db, id, "processing")
	if err := w.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-w.done:
		w.done <- err
		t.Fatalf("worker started with SIGHUP ignored exited on SIGHUP: %v\nstderr:\n%s", err, w.stderr.String())
	case <-time.After(2 * time.Second):
	}
	if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-w.done:
		w.done <- err
		if err != nil {
			t.Errorf("worker after SIGTERM: %v\nstderr:\n%s", err, w.stderr.String())
		}
	case <-time.After(30 * time.Second):
		t.Fatal("worker did not stop on SIGTERM")
	}
}
