package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/internal/testdb"
	"github.com/leasehold/leasehold/internal/testlog"
	"github.com/leasehold/leasehold/view"
)

// binary is the leasehold command built once by TestMain.
var binary string

// TestMain builds the command (with -race when the tests run with it) and
// runs the tests against the binary as a subprocess.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "leasehold-cli-test")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "leasehold")
	args := []string{"build", "-o", binary}
	if raceEnabled {
		args = append(args, "-race")
	}
	build := exec.Command("go", append(args, ".")...)
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "build leasehold:", err)
		os.Exit(1)
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// result is how one run of the binary ended.
type result struct {
	code           int
	stdout, stderr string
}

func (r result) String() string {
	return fmt.Sprintf("exit %d\nstdout:\n%s\nstderr:\n%s", r.code, r.stdout, r.stderr)
}

// baseEnv is the environment without a configured database. A binary
// built with -race would sleep a second at exit (GORACE atexit_sleep_ms):
// it is told not to, and to fail loudly on a race.
func baseEnv() []string {
	env := []string{"GORACE=atexit_sleep_ms=0 exitcode=66"}
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, cli.EnvDatabaseURL+"=") && !strings.HasPrefix(kv, "GORACE=") {
			env = append(env, kv)
		}
	}
	return env
}

// command prepares a run of the binary in dir ("" for the current one).
func command(ctx context.Context, dir string, env []string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, binary, args...)
	cmd.Dir = dir
	cmd.Env = append(baseEnv(), env...)
	return cmd
}

// runIn runs the binary to the end.
func runIn(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := command(ctx, dir, env, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("run leasehold %v: %v", args, err)
		}
		code = ee.ExitCode()
	}
	return result{code: code, stdout: stdout.String(), stderr: stderr.String()}
}

// lh runs the binary against db and returns its result.
func lh(t *testing.T, db string, args ...string) result {
	t.Helper()
	return runIn(t, "", nil, append([]string{"--db", db}, args...)...)
}

// ok runs the binary against db and fails the test unless it exits 0.
func ok(t *testing.T, db string, args ...string) string {
	t.Helper()
	r := lh(t, db, args...)
	if r.code != 0 {
		t.Fatalf("leasehold %s: %s", strings.Join(args, " "), r)
	}
	return r.stdout
}

// okJSON runs the binary with --json and decodes its output into v.
func okJSON(t *testing.T, db string, v any, args ...string) {
	t.Helper()
	out := ok(t, db, append([]string{"--json"}, args...)...)
	if err := json.Unmarshal([]byte(out), v); err != nil {
		t.Fatalf("leasehold --json %s: %v\n%s", strings.Join(args, " "), err, out)
	}
}

// openDB opens db (a --db value) as the commands do, closed when the
// test ends.
func openDB(t *testing.T, db string) *cli.DB {
	t.Helper()
	target, err := cli.ParseTarget(db)
	if err != nil {
		t.Fatal(err)
	}
	h, err := cli.Open(t.Context(), target, cli.OpenOptions{})
	if err != nil {
		t.Fatalf("open %s: %v", db, err)
	}
	t.Cleanup(func() { _ = h.Close() })
	return h
}

// forEachDB runs fn on a fresh migrated SQLite file and a fresh
// PostgreSQL schema, as subtests named sqlite and postgres.
func forEachDB(t *testing.T, fn func(t *testing.T, db string)) {
	dbs := []struct {
		name string
		open func(t *testing.T) string
	}{
		{"sqlite", func(t *testing.T) string { return "sqlite:" + testdb.SQLitePath(t) }},
		{"postgres", func(t *testing.T) string { return testdb.PostgresURL(t) }},
	}
	for _, d := range dbs {
		t.Run(d.name, func(t *testing.T) {
			t.Parallel()
			db := d.open(t)
			ok(t, db, "migrate")
			fn(t, db)
		})
	}
}

// waitFor polls cond until it holds or the timeout passes.
func waitFor(t *testing.T, timeout time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// showJob returns `jobs show ID --json`.
func showJob(t *testing.T, db string, id int64) view.JobInfoView {
	t.Helper()
	var v view.JobInfoView
	okJSON(t, db, &v, "jobs", "show", fmt.Sprint(id))
	return v
}

// enqueueID enqueues a job and returns its id.
func enqueueID(t *testing.T, db string, args ...string) int64 {
	t.Helper()
	var out struct {
		ID        int64 `json:"id"`
		Duplicate bool  `json:"duplicate"`
	}
	okJSON(t, db, &out, append([]string{"enqueue"}, args...)...)
	return out.ID
}

// background is a long-running leasehold process (a worker). Its
// output may be read while it runs.
type background struct {
	cmd            *exec.Cmd
	stdout, stderr testlog.Buffer
	done           chan error
}

// start runs the binary against db in the background; the process is
// killed when the test ends if it is still running.
func start(t *testing.T, db string, args ...string) *background {
	t.Helper()
	return startCmd(t, func(ctx context.Context) *exec.Cmd {
		return command(ctx, "", nil, append([]string{"--db", db}, args...)...)
	})
}

// startCmd runs the command build makes in the background; the process
// is killed when the test ends if it is still running.
func startCmd(t *testing.T, build func(ctx context.Context) *exec.Cmd) *background {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	b := &background{done: make(chan error, 1)}
	b.cmd = build(ctx)
	args := b.cmd.Args
	b.cmd.Stdout, b.cmd.Stderr = &b.stdout, &b.stderr
	if err := b.cmd.Start(); err != nil {
		t.Fatalf("start leasehold %v: %v", args, err)
	}
	go func() { b.done <- b.cmd.Wait() }()
	t.Cleanup(func() {
		cancel()
		<-b.done
	})
	return b
}

// wait waits for the process to exit and returns its exit error.
func (b *background) wait(t *testing.T) error {
	t.Helper()
	select {
	case err := <-b.done:
		b.done <- err
		return err
	case <-time.After(time.Minute):
		t.Fatal("process did not exit within a minute")
		return nil
	}
}
