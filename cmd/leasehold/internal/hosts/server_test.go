package hosts

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/leasehold/leasehold/internal/pgctl"
)

// TestStartServerStopsOrphan: a run killed before its teardown leaves its
// server running (pg_ctl start detaches it), bound to the address and
// port. The next run with the same bridge and port must stop it and start
// its own. The server listens on loopback here, which clashes the same way
// as the bridge address.
func TestStartServerStopsOrphan(t *testing.T) {
	if _, err := pgctl.Find("initdb"); err != nil {
		t.Skipf("skipping: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	o := Options{Port: 5447}
	o.Network.Bridge = "lhtest-orph"
	subnet := netip.MustParsePrefix("127.0.0.0/8")
	dir := serverDir(o)
	t.Cleanup(func() { stopServerIn(t, dir) })

	orphan, err := startServer(ctx, o, "127.0.0.1", subnet)
	if err != nil {
		t.Fatal(err)
	}
	// Stop the orphan whatever the test's outcome, wherever its directory.
	t.Cleanup(func() { stopServerIn(t, orphan.Dir) })
	first, err := pgctl.Postmaster(orphan.DataDir)
	if err != nil {
		t.Fatal(err)
	}

	srv, err := startServer(ctx, o, "127.0.0.1", subnet)
	if err != nil {
		t.Fatalf("second start with the first server still running: %v", err)
	}
	defer func() {
		if err := srv.Stop(context.Background()); err != nil {
			t.Error(err)
		}
		if _, err := os.Stat(srv.Dir); !os.IsNotExist(err) {
			t.Errorf("server directory %s left behind by Stop: %v", srv.Dir, err)
		}
	}()
	if syscall.Kill(first, 0) == nil && !isZombie(first) {
		t.Errorf("postmaster %d of the first server still runs", first)
	}
	conn, err := pgx.Connect(ctx, srv.URL("127.0.0.1"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if err := conn.Ping(ctx); err != nil {
		t.Fatal(err)
	}
}

// isZombie reports whether process pid has exited but not been reaped.
func isZombie(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(b), ')')
	f := strings.Fields(string(b[i+1:]))
	return len(f) > 0 && f[0] == "Z"
}

// stopServerIn stops the server running in dir, if any, and removes dir.
func stopServerIn(t *testing.T, dir string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pgCtl, err := pgctl.Find("pg_ctl")
	if err != nil {
		t.Error(err)
		return
	}
	if err := pgctl.StopDir(ctx, pgCtl, filepath.Join(dir, "data")); err != nil {
		t.Error(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Error(err)
	}
}
