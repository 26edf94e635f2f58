package testdb

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/pgctl"
)

// Cluster is a PostgreSQL server of a test's own, which the test may
// restart or crash without disturbing the shared server other packages'
// tests use. It listens on a Unix socket in its directory only.
type Cluster struct {
	// Dir holds the data directory, the socket and the server log.
	Dir string
	// DataDir is the cluster's PGDATA.
	DataDir string
	// LogFile is the server log.
	LogFile string
	// PGCtl is the pg_ctl program that manages the cluster.
	PGCtl string
	// URL connects to the postgres database as the postgres superuser.
	URL string
}

// StartCluster creates (initdb) and starts a PostgreSQL cluster in a new
// temporary directory, and stops it when the test ends; it removes the
// directory then, unless the test failed (removeUnlessFailed). It
// skips the test when the PostgreSQL programs are missing, or fails it
// when EnvRequire is 1. As root, the programs run as the postgres user.
func StartCluster(t testing.TB) *Cluster {
	t.Helper()
	initdb, err1 := pgctl.Find("initdb")
	pgCtl, err2 := pgctl.Find("pg_ctl")
	if err := errors.Join(err1, err2); err != nil {
		if os.Getenv(EnvRequire) == "1" {
			t.Fatalf("testdb: %v, but %s=1: PostgreSQL tests must run", err, EnvRequire)
		}
		t.Skipf("testdb: %v: skipping PostgreSQL test", err)
	}
	// Not t.TempDir: its parents are private to us, and as root the
	// server runs as another user that must reach the directory.
	dir, err := os.MkdirTemp("", "leasehold-cluster-")
	if err != nil {
		t.Fatalf("testdb: cluster directory: %v", err)
	}
	started := false
	t.Cleanup(func() { removeUnlessFailed(t, dir, started) })
	if err := pgctl.ShareDir(dir); err != nil {
		t.Fatalf("testdb: %v", err)
	}
	c := &Cluster{
		Dir: dir, DataDir: filepath.Join(dir, "data"), LogFile: filepath.Join(dir, "postgres.log"), PGCtl: pgCtl,
		URL: "postgres://postgres@/postgres?host=" + dir + "&port=5432&sslmode=disable",
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if err := pgctl.Run(ctx, initdb, "-D", c.DataDir, "-U", "postgres", "-A", "trust", "--no-sync"); err != nil {
		t.Fatalf("testdb: %v", err)
	}
	conf := fmt.Sprintf("\nlisten_addresses = ''\nunix_socket_directories = '%s'\nport = 5432\nmax_connections = 200\nfsync = off\n", dir)
	if err := appendFile(filepath.Join(c.DataDir, "postgresql.conf"), conf); err != nil {
		t.Fatalf("testdb: configure cluster: %v", err)
	}
	if err := pgctl.Run(ctx, pgCtl, "start", "-D", c.DataDir, "-l", c.LogFile, "-w", "-t", "60"); err != nil {
		t.Fatalf("testdb: %v\n%s", err, pgctl.ReadTail(c.LogFile))
	}
	started = true
	t.Cleanup(func() { c.stop(t) })
	return c
}

// removeUnlessFailed removes a cluster's directory, or, when the cluster
// started and the test failed, keeps it (stopped by then) and says where:
// the data a failed check read (a chaos run's schema and history) can
// then be read again with pg_ctl -D DIR/data start (as the postgres user
// under root).
func removeUnlessFailed(t testing.TB, dir string, started bool) {
	if started && t.Failed() {
		t.Logf("testdb: the test failed: cluster kept in %s (pg_ctl -D %s start; as the postgres user under root)",
			dir, filepath.Join(dir, "data"))
		return
	}
	_ = os.RemoveAll(dir)
}

func (c *Cluster) stop(t testing.TB) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := pgctl.StopDir(ctx, c.PGCtl, c.DataDir); err != nil {
		t.Logf("testdb: stop cluster: %v", err)
	}
}

func appendFile(path, text string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(text); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}
