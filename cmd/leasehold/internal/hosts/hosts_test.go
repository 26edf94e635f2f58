package hosts_test

import (
	"bytes"
	"context"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/hosts"
	"github.com/leasehold/leasehold/internal/netns"
	"github.com/leasehold/leasehold/internal/pgctl"
)

// TestSmallSweep runs the sweep on two namespaces with one and two
// worker processes, on a PostgreSQL server of its own: every job must be
// completed exactly once, the workers of the second step must have worked
// from both namespaces, and their sessions must have been seen. It skips
// without root, ip netns or the PostgreSQL programs.
func TestSmallSweep(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	if err := netns.Available(ctx); err != nil {
		t.Skipf("skipping: %v", err)
	}
	if _, err := pgctl.Find("initdb"); err != nil {
		t.Skipf("skipping: %v", err)
	}
	var progress bytes.Buffer
	rep, err := hosts.Run(ctx, hosts.Options{
		Executable: buildLeasehold(t),
		Network: netns.Config{Prefix: "lhtest-h", Bridge: "lhtest-hb", Hosts: 2,
			Subnet: netip.MustParsePrefix("10.213.252.0/24")},
		Jobs: 3000, Procs: []int{1, 2}, Concurrency: 10, NoCeiling: true, Progress: &progress,
	})
	t.Logf("progress:\n%s", progress.String())
	if err != nil {
		t.Fatal(err)
	}
	var table bytes.Buffer
	_ = rep.Print(&table)
	t.Logf("report:\n%s", table.String())
	if len(rep.Steps) != 2 {
		t.Fatalf("%d steps, want 2", len(rep.Steps))
	}
	for _, s := range rep.Steps {
		if !s.Check.OK() || s.Check.Inserted != 3000 {
			t.Errorf("%d processes: %v", s.Procs, s.Check.Problems())
		}
		if s.Connections < s.Procs || s.JobsPerSec <= 0 {
			t.Errorf("%d processes: %d sessions, %.0f jobs/s", s.Procs, s.Connections, s.JobsPerSec)
		}
	}
	if per := rep.Steps[1].Check.PerHost; len(per) != 2 || per["lhtest-h1"] == 0 || per["lhtest-h2"] == 0 {
		t.Errorf("jobs per host with two processes: %v, want both namespaces", per)
	}
	if !rep.OK() {
		t.Error("report not OK")
	}
}

// buildLeasehold builds the leasehold command for the workers.
func buildLeasehold(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "leasehold")
	cmd := exec.Command("go", "build", "-o", path, "github.com/leasehold/leasehold/cmd/leasehold")
	cmd.Env = os.Environ()
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return path
}
