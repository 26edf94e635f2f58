package pgctl_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
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
	postmaster, err := pgctl.Postmaster(left.DataDir)
	if err != nil {
		t.Fatal(err)
	}

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

// TestReclaimLeavesPlantedDirectory: a Reclaim directory has a name anyone
// can predict, under a shared /tmp. One planted there by someone else, its
// data a link to another cluster's data directory, or owned by another
// user, is refused (ErrForeignDir): no server is stopped, nothing removed.
func TestReclaimLeavesPlantedDirectory(t *testing.T) {
	if _, err := pgctl.Find("pg_ctl"); err != nil {
		t.Skipf("skipping: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	victim, err := pgctl.StartServer(ctx, pgctl.ServerOptions{Port: 5451})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = victim.Stop(context.Background()) })
	postmaster, err := pgctl.Postmaster(victim.DataDir)
	if err != nil {
		t.Fatal(err)
	}
	planted := t.TempDir()
	for _, d := range []string{filepath.Dir(planted), planted} { // the server user walks through them
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(victim.DataDir, filepath.Join(planted, "data")); err != nil {
		t.Fatal(err)
	}
	s, err := pgctl.StartServer(ctx, pgctl.ServerOptions{Dir: planted, Reclaim: true, Port: 5452})
	if err == nil {
		_ = s.Stop(context.Background())
	}
	if !errors.Is(err, pgctl.ErrForeignDir) {
		t.Errorf("Reclaim of a directory whose data links to another cluster: %v, want ErrForeignDir", err)
	}
	if !alive(postmaster) {
		t.Fatalf("the other cluster's postmaster %d was stopped", postmaster)
	}
	if _, err := os.Lstat(filepath.Join(planted, "data")); err != nil {
		t.Errorf("the planted link was removed: %v", err)
	}

	if os.Geteuid() != 0 {
		return // only root can give a directory to another user
	}
	owned := filepath.Join(t.TempDir(), "server")
	if err := os.Mkdir(owned, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(owned, 65534, 65534); err != nil { // nobody
		t.Fatal(err)
	}
	_, err = pgctl.StartServer(ctx, pgctl.ServerOptions{Dir: owned, Reclaim: true, Port: 5452})
	if !errors.Is(err, pgctl.ErrForeignDir) {
		t.Errorf("Reclaim of a directory another user owns: %v, want ErrForeignDir", err)
	}
}
