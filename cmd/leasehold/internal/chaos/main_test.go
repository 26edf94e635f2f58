package chaos_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/chaos"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
)

// binDir holds the leasehold binaries the tests build (once each).
var binDir string

// TestMain makes a directory for the binaries and removes it at the end.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "leasehold-chaos-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

var (
	buildMu sync.Mutex
	built   = map[string]string{}
)

// binary builds the leasehold command once per flavour: "" (the workers:
// never with -race, since modernc SQLite is ~20x slower under it),
// "orchestrator" (with -race when the tests run with it) and "unfenced"
// (the test-only chaos_unfenced build).
func binary(t *testing.T, flavour string) string {
	t.Helper()
	buildMu.Lock()
	defer buildMu.Unlock()
	if flavour == "orchestrator" && !raceEnabled {
		flavour = ""
	}
	if path, ok := built[flavour]; ok {
		return path
	}
	name, args := "leasehold", []string{"build"}
	switch flavour {
	case "orchestrator":
		name, args = "leasehold-race", append(args, "-race")
	case "unfenced":
		name, args = "leasehold-unfenced", append(args, "-tags", "chaos_unfenced")
	}
	path := filepath.Join(binDir, name)
	args = append(args, "-o", path)
	cmd := exec.Command("go", append(args, "github.com/leasehold/leasehold/cmd/leasehold")...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	built[flavour] = path
	return path
}

// result is how one chaos run ended.
type result struct {
	code           int
	report         *chaos.Report
	stdout, stderr string
	took           time.Duration
}

func (r result) String() string {
	return fmt.Sprintf("exit %d after %s\nstdout:\n%s\nstderr:\n%s", r.code, r.took.Round(time.Millisecond), r.stdout, r.stderr)
}

// runChaos runs `bin --json chaos args...` to the end and decodes its
// report. A race found in the orchestrator fails the test.
func runChaos(t *testing.T, bin string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"--json", "chaos"}, args...)...)
	cmd.Env = []string{"GORACE=atexit_sleep_ms=0 exitcode=66"}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, cli.EnvDatabaseURL+"=") && !strings.HasPrefix(kv, "GORACE=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String(), took: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("run chaos: %v", err)
	}
	if strings.Contains(r.stderr, "DATA RACE") || r.code == 66 {
		t.Fatalf("data race in the chaos harness:\n%s", r.stderr)
	}
	if r.stdout != "" {
		r.report = &chaos.Report{}
		if err := json.Unmarshal(stdout.Bytes(), r.report); err != nil {
			t.Fatalf("decode the report: %v\n%s", err, r)
		}
	}
	t.Logf("chaos run: exit %d after %s", r.code, r.took.Round(time.Millisecond))
	return r
}

// mustPass fails the test unless the run passed every check, and logs
// the schedule and the figures.
func mustPass(t *testing.T, r result) *chaos.Report {
	t.Helper()
	if r.report == nil {
		t.Fatalf("no report: %s", r)
	}
	var buf bytes.Buffer
	r.report.Print(&buf)
	t.Logf("schedule:\n%s\n%s", r.stderr, buf.String())
	if r.code != 0 || !r.report.OK() {
		t.Fatalf("chaos run failed: exit %d, invariants failed: %v, problems: %v", r.code, r.report.Failed(), r.report.Problems)
	}
	return r.report
}
