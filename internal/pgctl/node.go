package pgctl

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Node is a PostgreSQL server of the caller's own in Dir: its data
// directory, its Unix socket and its log. It listens on the socket only
// (no TCP), so Port only names the socket file.
type Node struct {
	Dir  string
	Port int
	// PGCtl is the pg_ctl program, found by InitPrimary and NewStandby.
	PGCtl string
}

// DataDir is the server's PGDATA.
func (s *Node) DataDir() string { return filepath.Join(s.Dir, "data") }

// LogFile is the server's log.
func (s *Node) LogFile() string { return filepath.Join(s.Dir, "postgres.log") }

// URL connects to the postgres database as the postgres superuser.
func (s *Node) URL() string {
	return fmt.Sprintf("postgres://postgres@/postgres?host=%s&port=%d&sslmode=disable", s.Dir, s.Port)
}

// Start starts the server and waits until it accepts connections. extra
// are server options (postgres -c ...), for this start only.
func (s *Node) Start(ctx context.Context, extra ...string) error {
	args := []string{"start", "-D", s.DataDir(), "-l", s.LogFile(), "-w", "-t", "60"}
	if len(extra) > 0 {
		args = append(args, "-o", strings.Join(extra, " "))
	}
	return Run(ctx, s.PGCtl, args...)
}

// Stop stops the server at once (pg_ctl stop -m immediate); a server
// already down is no error.
func (s *Node) Stop(ctx context.Context) error {
	return StopDir(ctx, s.PGCtl, s.DataDir())
}

// StopDir stops the server running in dataDir at once with pgCtl
// (pg_ctl stop -m immediate -w). A server that is not running is no
// error, and neither is one that died and left its postmaster.pid (a
// SIGKILL does): pg_ctl would signal whatever process has taken that pid
// since, such as another server's backend.
func StopDir(ctx context.Context, pgCtl, dataDir string) error {
	if _, err := Postmaster(dataDir); err != nil {
		return nil
	}
	return Run(ctx, pgCtl, "stop", "-D", dataDir, "-m", "immediate", "-w")
}

// Promote ends recovery on a standby (pg_ctl promote) and waits until it
// accepts writes.
func (s *Node) Promote(ctx context.Context) error {
	return Run(ctx, s.PGCtl, "promote", "-D", s.DataDir(), "-w", "-t", "60")
}

// Kill SIGKILLs the server's postmaster and every process it started, as
// when its machine dies: no shutdown, no checkpoint, sessions cut. The
// postmaster is stopped first so that it forks nothing meanwhile; Kill
// returns once no process of the server is left (every one of them
// works in the data directory).
func (s *Node) Kill() error {
	pid, err := s.postmaster()
	if err != nil {
		return err
	}
	if err := syscall.Kill(pid, syscall.SIGSTOP); err != nil {
		return fmt.Errorf("pgctl: stop postmaster %d: %w", pid, err)
	}
	children := childrenOf(pid)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		return fmt.Errorf("pgctl: kill postmaster %d: %w", pid, err)
	}
	for _, c := range children {
		_ = syscall.Kill(c, syscall.SIGKILL)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		left := workingIn(s.DataDir())
		if len(left) == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("pgctl: processes %v of %s outlived SIGKILL", left, s.DataDir())
		}
		for _, c := range left {
			_ = syscall.Kill(c, syscall.SIGKILL)
		}
	}
}

// workingIn lists the live processes whose working directory is dir.
func workingIn(dir string) []int {
	cwds, _ := filepath.Glob("/proc/[0-9]*/cwd")
	var out []int
	for _, path := range cwds {
		if target, err := os.Readlink(path); err != nil || target != dir {
			continue
		}
		pid, err := strconv.Atoi(filepath.Base(filepath.Dir(path)))
		if err != nil {
			continue
		}
		if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); err == nil && isZombie(b) {
			continue
		}
		out = append(out, pid)
	}
	return out
}

// isZombie reports whether a /proc/<pid>/stat line is a zombie's.
func isZombie(stat []byte) bool {
	i := strings.LastIndexByte(string(stat), ')')
	f := strings.Fields(string(stat[i+1:]))
	return len(f) > 0 && f[0] == "Z"
}

// postmaster returns the pid of the server's postmaster.
func (s *Node) postmaster() (int, error) { return Postmaster(s.DataDir()) }

// Postmaster reads the pid of the postmaster running in dataDir from
// its postmaster.pid, and checks that the process is still that server's:
// a postmaster works in its data directory. The file of a server that
// died names a pid that another process may hold by now.
func Postmaster(dataDir string) (int, error) {
	b, err := os.ReadFile(filepath.Join(dataDir, "postmaster.pid"))
	if err != nil {
		return 0, fmt.Errorf("pgctl: server not running: %w", err)
	}
	first, _, _ := strings.Cut(string(b), "\n")
	pid, err := strconv.Atoi(strings.TrimSpace(first))
	if err != nil || pid <= 0 {
		return 0, fmt.Errorf("pgctl: bad postmaster.pid in %s", dataDir)
	}
	if syscall.Kill(pid, 0) != nil || !sameDir(fmt.Sprintf("/proc/%d/cwd", pid), dataDir) {
		return 0, fmt.Errorf("pgctl: postmaster %d of %s is gone", pid, dataDir)
	}
	return pid, nil
}

// sameDir reports whether paths a and b name the same directory.
func sameDir(a, b string) bool {
	fa, err := os.Stat(a)
	if err != nil {
		return false
	}
	fb, err := os.Stat(b)
	return err == nil && os.SameFile(fa, fb)
}

// childrenOf lists the processes whose parent is pid (from /proc).
func childrenOf(pid int) []int {
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	var out []int
	for _, path := range stats {
		b, err := os.ReadFile(path)
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so cut at ')'.
		i := strings.LastIndexByte(string(b), ')')
		if i < 0 {
			continue
		}
		f := strings.Fields(string(b[i+1:]))
		if len(f) < 2 || f[1] != strconv.Itoa(pid) {
			continue
		}
		if c, err := strconv.Atoi(filepath.Base(filepath.Dir(path))); err == nil {
			out = append(out, c)
		}
	}
	return out
}

// PrepareDir creates dir for a server and, as root, gives it to
// ServerUser, who runs the server and must reach it (ShareDir).
func PrepareDir(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("pgctl: %w", err)
	}
	return ShareDir(dir)
}

// ErrExists is returned when a server directory is already in use.
var ErrExists = errors.New("pgctl: server directory not empty")
