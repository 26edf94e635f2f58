package pgctl_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/pgctl"
)

// TestStaleServerPIDIsLeftAlone: a server SIGKILLed leaves its
// postmaster.pid, whose pid another process can take. Stopping or killing
// that server again must not signal the process now holding the pid (here
// a sleep run as the server user, whom pg_ctl could signal).
func TestStaleServerPIDIsLeftAlone(t *testing.T) {
	pgCtl, err := pgctl.Find("pg_ctl")
	if err != nil {
		t.Skipf("skipping: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	stranger := pgctl.Command(ctx, "sleep", "60")
	if err := stranger.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = stranger.Process.Kill(); _ = stranger.Wait() }()
	pid := serverUserPID(t, stranger.Process.Pid)

	node := &pgctl.Node{Dir: t.TempDir(), Port: 5499, PGCtl: pgCtl}
	if err := os.MkdirAll(node.DataDir(), 0o755); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"PG_VERSION": "15\n", "postmaster.pid": strconv.Itoa(pid) + "\n" + node.DataDir() + "\n"} {
		if err := os.WriteFile(filepath.Join(node.DataDir(), name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := pgctl.ShareDir(node.Dir); err != nil {
		t.Fatal(err)
	}
	if err := node.Stop(ctx); err != nil {
		t.Errorf("Stop of a dead server: %v, want nil", err)
	}
	if err := node.Kill(); err == nil {
		t.Error("Kill of a dead server: nil error, want the postmaster gone")
	}
	time.Sleep(100 * time.Millisecond) // a signal sent is delivered by now
	if !alive(pid) {
		t.Fatalf("process %d, which holds the dead server's pid, was signalled", pid)
	}
}

// serverUserPID returns the sleep that pgctl.Command started as pid: the
// process itself, or as root the child runuser started (it waits for it).
func serverUserPID(t *testing.T, pid int) int {
	t.Helper()
	if !pgctl.AsRoot() {
		return pid
	}
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/task/" + strconv.Itoa(pid) + "/children")
		if err != nil {
			t.Fatal(err)
		}
		if f := strings.Fields(string(b)); len(f) > 0 {
			c, _ := strconv.Atoi(f[0])
			return c
		}
	}
	t.Fatal("runuser started no sleep")
	return 0
}

// alive reports whether process pid runs (exists and is no zombie).
func alive(pid int) bool {
	if syscall.Kill(pid, 0) != nil {
		return false
	}
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	return len(f) > 0 && f[0] != "Z"
}
