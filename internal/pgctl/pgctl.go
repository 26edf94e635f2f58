// Package pgctl runs the PostgreSQL server programs (initdb, pg_ctl) that
// the chaos harness and the tests use to start, stop and restart a cluster
// of their own. PostgreSQL refuses to run as root, so when the caller is
// root the programs run as the postgres user through runuser.
package pgctl

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// ErrNotFound reports a PostgreSQL program that is neither on the PATH nor
// in /usr/lib/postgresql/*/bin.
var ErrNotFound = errors.New("pgctl: PostgreSQL program not found")

// ServerUser is the account the server programs run as when the caller is
// root.
const ServerUser = "postgres"

// Find returns the path of a PostgreSQL program: from the PATH, else from
// the newest /usr/lib/postgresql/<version>/bin.
func Find(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	dirs, _ := filepath.Glob("/usr/lib/postgresql/*/bin")
	sort.Slice(dirs, func(i, j int) bool { return versionOf(dirs[i]) > versionOf(dirs[j]) })
	for _, dir := range dirs {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: %s (install PostgreSQL, e.g. apt-get install postgresql)", ErrNotFound, name)
}

// versionOf extracts the major version of /usr/lib/postgresql/<v>/bin.
func versionOf(dir string) int {
	v := 0
	for _, c := range filepath.Base(filepath.Dir(dir)) {
		if c < '0' || c > '9' {
			break
		}
		v = v*10 + int(c-'0')
	}
	return v
}

// AsRoot reports whether the server programs must be run through runuser.
func AsRoot() bool { return os.Geteuid() == 0 }

// Command prepares program with args, run as ServerUser when the caller is
// root. Its output is discarded unless the caller sets Stdout/Stderr.
func Command(ctx context.Context, program string, args ...string) *exec.Cmd {
	if AsRoot() {
		return exec.CommandContext(ctx, "runuser", append([]string{"-u", ServerUser, "--", program}, args...)...)
	}
	return exec.CommandContext(ctx, program, args...)
}

// Run runs program with args (as ServerUser when root) and returns an
// error carrying the end of its output when it fails. The program must not
// leave a process behind that holds its output open (pg_ctl start needs
// -l).
func Run(ctx context.Context, program string, args ...string) error {
	cmd := Command(ctx, program, args...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s %s: %w: %s", filepath.Base(program), strings.Join(args, " "), err, tail(out.String()))
	}
	return nil
}

// RestartOptions say how to restart a server.
type RestartOptions struct {
	// PGCtl is the pg_ctl program; empty finds it.
	PGCtl string
	// DataDir is the cluster's data directory (PGDATA).
	DataDir string
	// LogFile, when set, receives the restarted server's log (pg_ctl -l);
	// otherwise its output is discarded.
	LogFile string
	// Timeout bounds the wait for the server to accept connections again.
	// Default 60 s.
	Timeout time.Duration
}

// RestartImmediate restarts the server with `pg_ctl restart -m immediate`:
// every backend is killed without a checkpoint, as in a crash, and the
// server runs crash recovery before it accepts connections again. It
// returns once the server is up (pg_ctl -w).
func RestartImmediate(ctx context.Context, o RestartOptions) error {
	pgCtl := o.PGCtl
	if pgCtl == "" {
		var err error
		if pgCtl, err = Find("pg_ctl"); err != nil {
			return err
		}
	}
	timeout := o.Timeout
	if timeout <= 0 {
		timeout = time.Minute
	}
	args := []string{"restart", "-D", o.DataDir, "-m", "immediate", "-w", "-t", fmt.Sprint(int(timeout.Seconds()))}
	if o.LogFile != "" {
		return Run(ctx, pgCtl, append(args, "-l", o.LogFile)...)
	}
	// Without -l the new server inherits pg_ctl's output: it must not be a
	// pipe we wait on, so it goes to /dev/null.
	if err := Command(ctx, pgCtl, args...).Run(); err != nil {
		return fmt.Errorf("pg_ctl %s: %w (pass a log file to see the server's output)", strings.Join(args, " "), err)
	}
	return nil
}

// tail returns the last lines of s on one line.
func tail(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	return strings.Join(lines, " | ")
}
