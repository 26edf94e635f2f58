package pgctl_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/pgctl"
)

// TestReclaimStopsLeftServer: a server left running (its starter killed
// before it stopped it) holds its address and port, so that another
// server there fails with ErrAddrInUse. A server started with Reclaim in
// the same directory stops it and starts, and its Stop removes the
// directory.
func TestReclaimStopsLeftServer(t *testing.T) {
	pgCtl, err := pgctl.Find("pg_ctl")
	if err != nil {
		t.Skipf("skipping: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	parent, err := os.MkdirTemp("", "leasehold-pgctl-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(parent) })
	if err := os.Chmod(parent, 0o755); err != nil { // the server user walks through it
		t.Fatal(err)
	}
	dir := filepath.Join(parent, "server")
	t.Cleanup(func() { _ = pgctl.StopDir(context.Background(), pgCtl, filepath.Join(dir, "data")) })
	o := pgctl.ServerOptions{Dir: dir, Reclaim: true, Port: 5448, ListenAddresses: []string{"127.0.0.1"}}

	left, err := pgctl.StartServer(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(left.DataDir, "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	postmaster, _ := strconv.Atoi(strings.TrimSpace(strings.Split(string(b), "\n")[0]))

	other, err := pgctl.StartServer(ctx, pgctl.ServerOptions{Port: o.Port, ListenAddresses: o.ListenAddresses})
	if err == nil {
		_ = other.Stop(context.Background())
		t.Fatal("a second server on the same address and port started")
	}
	if !errors.Is(err, pgctl.ErrAddrInUse) {
		t.Errorf("second server on the same address and port: %v, want ErrAddrInUse", err)
	}

	s, err := pgctl.StartServer(ctx, o)
	if err != nil {
		t.Fatalf("start with Reclaim while the left server runs: %v", err)
	}
	if alive(postmaster) {
		t.Errorf("postmaster %d of the left server still runs", postmaster)
	}
	if err := s.Stop(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("server directory %s left behind by Stop: %v", dir, err)
	}
}
