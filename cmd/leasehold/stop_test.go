//go:build unix

package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/pgctl"
	"github.com/leasehold/leasehold/internal/testdb"
)

// Timings of TestStopWithDatabaseDown: the worker's lease TTLs (short,
// and the default, whose release budget is Stop's full 10 s), its
// shutdown timeout, and what its exit may take beyond those.
const (
	downTTL        = 2 * time.Second
	downDefaultTTL = 30 * time.Second
	downRelease    = 10 * time.Second
	downShutdown   = 300 * time.Millisecond
	downMargin     = 2500 * time.Millisecond
)

// TestStopWithDatabaseDown: SIGTERM to `leasehold work` while PostgreSQL
// does not answer (its processes frozen: every statement hangs) or is gone
// (stopped: every statement fails) ends within the shutdown timeout and
// the release budget (bounded by the lease TTL), exits 0, prints the
// counters and says how many leases it could not release. The stopped
// case runs with the default TTL, so that Stop spends its whole release
// budget.
func TestStopWithDatabaseDown(t *testing.T) {
	cluster := testdb.StartCluster(t)
	db := cluster.URL
	ok(t, db, "migrate")
	t.Run("frozen", func(t *testing.T) {
		stopDuringOutage(t, db, "frozen", downTTL, func() {
			pids := serverPIDs(t, cluster.DataDir)
			signalAll(t, pids, syscall.SIGSTOP)
			t.Cleanup(func() { signalAll(t, pids, syscall.SIGCONT) })
		})
	})
	t.Run("stopped", func(t *testing.T) {
		stopDuringOutage(t, db, "stopped", downDefaultTTL, func() {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			if err := pgctl.Run(ctx, cluster.PGCtl, "stop", "-D", cluster.DataDir, "-m", "immediate", "-w"); err != nil {
				t.Fatal(err)
			}
		})
	})
}

// stopDuringOutage runs a worker on queue with one long job, causes the
// outage, and checks how SIGTERM ends the worker.
func stopDuringOutage(t *testing.T, db, queue string, ttl time.Duration, outage func()) {
	id := enqueueID(t, db, "leasehold.sleep", "--args", `{"duration":"1m"}`, "--queue", queue)
	w := start(t, db, "work", "--kind", "leasehold.sleep", "--queue", queue, "--concurrency", "4",
		"--ttl", ttl.String(), "--shutdown-timeout", downShutdown.String(), "--poll-interval", "50ms",
		"--log-level", "warn")
	waitStatus(t, db, id, "processing")
	outage()
	time.Sleep(200 * time.Millisecond) // a claim (free slots, 50 ms polls) is now in flight
	began := time.Now()
	if err := w.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	err := w.wait(t)
	took := time.Since(began)
	out, logs := w.stdout.String(), w.stderr.String()
	release := min(ttl, downRelease)
	if limit := downShutdown + release + downMargin; took > limit {
		t.Errorf("worker took %v to stop after SIGTERM, want at most %v (shutdown timeout %v + release budget %v + %v)",
			took, limit, downShutdown, release, downMargin)
	}
	if err != nil {
		t.Errorf("worker exit: %v", err)
	}
	if !strings.Contains(out, "stopped: claimed 1,") || !strings.Contains(out, "could not release 1 lease") {
		t.Errorf("worker's stop summary lacks its counters or the unreleased lease:\n%s\nstderr:\n%s", out, logs)
	}
	t.Logf("stopped in %v:\n%s\nstderr:\n%s", took.Round(time.Millisecond), out, logs)
}

// serverPIDs returns the postmaster of the cluster in dataDir and its
// children (the backends and background processes).
func serverPIDs(t *testing.T, dataDir string) []int {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		t.Fatal(err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	postmaster, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil {
		t.Fatalf("postmaster.pid: %v", err)
	}
	pids := []int{postmaster}
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so cut at ')'.
		i := strings.LastIndexByte(string(b), ')')
		f := strings.Fields(string(b[i+1:]))
		if len(f) > 1 && f[1] == strconv.Itoa(postmaster) {
			pid, _ := strconv.Atoi(filepath.Base(filepath.Dir(p)))
			pids = append(pids, pid)
		}
	}
	return pids
}

// signalAll sends sig to each of pids (processes of the test's own
// cluster).
func signalAll(t *testing.T, pids []int, sig syscall.Signal) {
	for _, pid := range pids {
		if err := syscall.Kill(pid, sig); err != nil {
			t.Logf("signal %v to %d: %v", sig, pid, err)
		}
	}
	t.Logf("sent %v to %s", sig, fmt.Sprint(pids))
}
