package pgctl

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// ServerOptions describe a throwaway PostgreSQL server (see StartServer).
type ServerOptions struct {
	// Dir is the new directory that holds the data directory, the socket
	// and the log (see Reclaim for one that may exist); empty makes a
	// temporary one, removed by Stop.
	Dir string
	// Port is the server's port. Default 5432 (the socket is in Dir, so
	// it clashes with no other server's unless ListenAddresses do).
	Port int
	// ListenAddresses are the TCP addresses the server listens on; none
	// means the Unix socket only.
	ListenAddresses []string
	// HBA are pg_hba.conf lines added before the default ones, e.g.
	// "host all all 10.213.0.0/24 trust".
	HBA []string
	// Settings are postgresql.conf lines added at the end.
	Settings []string
	// Durable keeps PostgreSQL's default durability (fsync on), for
	// figures comparable with a production server's; without it fsync is
	// off, as tests want.
	Durable bool
	// Reclaim makes a set Dir one that every run of the caller names
	// again (one per listen address and port, say) and that the server
	// owns: a server an earlier run left running from it is stopped and
	// Dir removed before initdb, and Stop removes Dir. pg_ctl start
	// detaches the server, so a run killed before it stops its server
	// leaves it running, bound to its address and port, and the next
	// run's server could not listen there; only a predictable directory
	// lets that run find it.
	Reclaim bool
}

// ErrAddrInUse reports a server that could not start because another
// process listens on its address and port.
var ErrAddrInUse = errors.New("pgctl: listen address and port in use")

// Server is a running throwaway server: trust authentication for the
// postgres superuser, fsync off unless ServerOptions.Durable. Stop ends
// it.
type Server struct {
	// Dir holds DataDir, the socket and LogFile.
	Dir     string
	DataDir string
	LogFile string
	Port    int
	pgCtl   string
	// ownDir says that Stop removes Dir: StartServer made it, or
	// ServerOptions.Reclaim gave it to the server.
	ownDir bool
}

// StartServer creates a cluster (initdb) in o.Dir and starts it, waiting
// until it accepts connections. On failure it removes what it made.
func StartServer(ctx context.Context, o ServerOptions) (*Server, error) {
	initdb, err1 := Find("initdb")
	pgCtl, err2 := Find("pg_ctl")
	if err := errors.Join(err1, err2); err != nil {
		return nil, err
	}
	s := &Server{Dir: o.Dir, Port: o.Port, pgCtl: pgCtl}
	if s.Port == 0 {
		s.Port = 5432
	}
	if s.Dir == "" {
		dir, err := os.MkdirTemp("", "leasehold-pg-")
		if err != nil {
			return nil, fmt.Errorf("pgctl: server directory: %w", err)
		}
		s.Dir, s.ownDir = dir, true
	} else {
		if o.Reclaim {
			if err := reclaimDir(ctx, pgCtl, s.Dir); err != nil {
				return nil, err
			}
			s.ownDir = true
		}
		if err := os.Mkdir(s.Dir, 0o755); err != nil {
			return nil, fmt.Errorf("pgctl: server directory: %w", err)
		}
	}
	s.DataDir, s.LogFile = filepath.Join(s.Dir, "data"), filepath.Join(s.Dir, "postgres.log")
	if err := s.start(ctx, initdb, o); err != nil {
		_ = s.Stop(context.WithoutCancel(ctx))
		return nil, err
	}
	return s, nil
}

func (s *Server) start(ctx context.Context, initdb string, o ServerOptions) error {
	if err := ShareDir(s.Dir); err != nil {
		return err
	}
	if err := Run(ctx, initdb, "-D", s.DataDir, "-U", "postgres", "-A", "trust", "--no-sync"); err != nil {
		return err
	}
	conf := []string{
		"listen_addresses = '" + strings.Join(o.ListenAddresses, ",") + "'",
		"unix_socket_directories = '" + s.Dir + "'",
		"port = " + strconv.Itoa(s.Port),
	}
	if !o.Durable {
		conf = append(conf, "fsync = off")
	}
	if err := appendLines(filepath.Join(s.DataDir, "postgresql.conf"), append(conf, o.Settings...)); err != nil {
		return err
	}
	if err := prependLines(filepath.Join(s.DataDir, "pg_hba.conf"), o.HBA); err != nil {
		return err
	}
	if err := Run(ctx, s.pgCtl, "start", "-D", s.DataDir, "-l", s.LogFile, "-w", "-t", "60"); err != nil {
		logTail := s.LogTail()
		if strings.Contains(logTail, "Address already in use") {
			return fmt.Errorf("%w (port %d on %s): %w: %s", ErrAddrInUse, s.Port, strings.Join(o.ListenAddresses, ","), err, logTail)
		}
		return fmt.Errorf("%w: %s", err, logTail)
	}
	return nil
}

// reclaimDir stops the server that StartServer started in dir, if it
// still runs, and removes dir. StopDir signals only a postmaster that
// still works in dir/data, never a process that took a dead one's pid.
//
// dir has a name anyone can predict, often under a shared /tmp: what is
// there is touched only if it is a directory, not a link, of the caller's
// or the server user's (serverDirOwned), so that a directory planted by
// someone else (its data a link to another cluster's) stops no server.
func reclaimDir(ctx context.Context, pgCtl, dir string) error {
	if _, err := os.Lstat(dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	for _, d := range []string{dir, filepath.Join(dir, "data")} {
		if err := serverDirOwned(d); err != nil {
			return err
		}
	}
	if err := StopDir(ctx, pgCtl, filepath.Join(dir, "data")); err != nil {
		return fmt.Errorf("pgctl: stop the server left running in %s: %w", dir, err)
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("pgctl: remove the server directory left behind: %w", err)
	}
	return nil
}

// ErrForeignDir reports a server directory left at a reclaimed path that
// is not one of ours: a link, or a directory another user owns.
var ErrForeignDir = errors.New("pgctl: server directory not ours")

// serverDirOwned checks that dir, if it exists, is a directory (Lstat: a
// link is refused, not followed) owned by the caller or, as root, by
// ServerUser, who owns the directories a root caller shares (ShareDir).
func serverDirOwned(dir string) error {
	fi, err := os.Lstat(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("pgctl: %w", err)
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !fi.IsDir() || !ok {
		return fmt.Errorf("%w: %s is not a directory (a link?): remove it", ErrForeignDir, dir)
	}
	if int(st.Uid) == os.Geteuid() {
		return nil
	}
	if AsRoot() {
		if u, err := user.Lookup(ServerUser); err == nil && u.Uid == strconv.Itoa(int(st.Uid)) {
			return nil
		}
	}
	return fmt.Errorf("%w: %s belongs to uid %d: remove it, or choose another directory", ErrForeignDir, dir, st.Uid)
}

// URL returns a URL of the postgres database as the postgres superuser:
// over TCP to host, or over the Unix socket when host is empty.
func (s *Server) URL(host string) string {
	q := url.Values{"sslmode": {"disable"}}
	h := host + ":" + strconv.Itoa(s.Port)
	if host == "" {
		q.Set("host", s.Dir)
		q.Set("port", strconv.Itoa(s.Port))
		h = ""
	}
	return (&url.URL{Scheme: "postgres", User: url.User("postgres"), Host: h, Path: "/postgres", RawQuery: q.Encode()}).String()
}

// LogTail returns the end of the server log, for error messages.
func (s *Server) LogTail() string {
	b, err := os.ReadFile(s.LogFile)
	if err != nil {
		return ""
	}
	return tail(string(b))
}

// Stop stops the server at once (pg_ctl stop -m immediate) and, when
// StartServer made its directory or ServerOptions.Reclaim was set,
// removes it.
func (s *Server) Stop(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	err := StopDir(ctx, s.pgCtl, s.DataDir)
	if s.ownDir {
		err = errors.Join(err, os.RemoveAll(s.Dir))
	}
	return err
}

// ShareDir lets the server user use dir when the caller is root (the
// server programs run as ServerUser then): it gives dir to that user.
func ShareDir(dir string) error {
	if err := os.Chmod(dir, 0o755); err != nil {
		return fmt.Errorf("pgctl: %w", err)
	}
	if !AsRoot() {
		return nil
	}
	if _, err := exec.LookPath("runuser"); err != nil {
		return fmt.Errorf("pgctl: running as root needs runuser to start PostgreSQL as %s: %w", ServerUser, err)
	}
	u, err := user.Lookup(ServerUser)
	if err != nil {
		return fmt.Errorf("pgctl: running as root needs a %s user: %w", ServerUser, err)
	}
	uid, _ := strconv.Atoi(u.Uid)
	gid, _ := strconv.Atoi(u.Gid)
	if err := os.Chown(dir, uid, gid); err != nil {
		return fmt.Errorf("pgctl: %w", err)
	}
	return nil
}

func appendLines(path string, lines []string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("pgctl: %w", err)
	}
	_, err = f.WriteString("\n" + strings.Join(lines, "\n") + "\n")
	return errors.Join(err, f.Close())
}

// prependLines puts lines first in a file (pg_hba.conf: the first line
// that matches decides).
func prependLines(path string, lines []string) error {
	if len(lines) == 0 {
		return nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("pgctl: %w", err)
	}
	if err := os.WriteFile(path, append([]byte(strings.Join(lines, "\n")+"\n"), b...), 0o600); err != nil {
		return fmt.Errorf("pgctl: %w", err)
	}
	return nil
}
