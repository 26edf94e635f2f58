package pgctl

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// baseConf is the configuration of the servers InitPrimary starts: on the
// Unix socket only, without fsync (the data is thrown away).
const baseConf = "\nlisten_addresses = ''\nunix_socket_directories = '%s'\nport = %d\nmax_connections = 200\nfsync = off\n"

// InitPrimary creates (initdb) and starts a server in dir, an empty or new
// directory, that accepts streaming replication from the local socket.
// conf is appended to its postgresql.conf, which a standby made from it
// copies (pg_basebackup copies postgresql.auto.conf too, so ALTER SYSTEM
// is no way around it): a setting meant for the primary alone must be
// overridden in the standby's own configuration, or on the standby once
// it runs.
func InitPrimary(ctx context.Context, dir string, port int, conf string) (*Node, error) {
	s, err := newNode(dir, port)
	if err != nil {
		return nil, err
	}
	initdb, err := Find("initdb")
	if err != nil {
		return nil, err
	}
	if err := Run(ctx, initdb, "-D", s.DataDir(), "-U", "postgres", "-A", "trust", "--no-sync"); err != nil {
		return nil, err
	}
	if err := appendConf(s.DataDir(), "postgresql.conf", fmt.Sprintf(baseConf, dir, port)+conf); err != nil {
		return nil, err
	}
	if err := s.Start(ctx); err != nil {
		return nil, fmt.Errorf("%w\n%s", err, ReadTail(s.LogFile()))
	}
	return s, nil
}

// NewStandby makes a streaming-replication standby of primary in dir with
// pg_basebackup -R, names it name (its application_name, which
// synchronous_standby_names refers to) and starts it. It streams from
// via ("host=... port=..." of primary_conninfo), or straight from the
// primary's socket when via is empty.
func NewStandby(ctx context.Context, primary *Node, dir string, port int, name, via string) (*Node, error) {
	s, err := newNode(dir, port)
	if err != nil {
		return nil, err
	}
	basebackup, err := Find("pg_basebackup")
	if err != nil {
		return nil, err
	}
	if err := Run(ctx, basebackup, "-D", s.DataDir(), "-h", primary.Dir,
		"-p", fmt.Sprint(primary.Port), "-U", "postgres", "-R", "-X", "stream", "-c", "fast", "--no-sync"); err != nil {
		return nil, err
	}
	if via == "" {
		via = fmt.Sprintf("host=%s port=%d", primary.Dir, primary.Port)
	}
	conf := fmt.Sprintf(baseConf, dir, port) +
		fmt.Sprintf("primary_conninfo = '%s user=postgres application_name=%s'\n", via, name)
	if err := appendConf(s.DataDir(), "postgresql.auto.conf", conf); err != nil {
		return nil, err
	}
	if err := s.Start(ctx); err != nil {
		return nil, fmt.Errorf("%w\n%s", err, ReadTail(s.LogFile()))
	}
	return s, nil
}

func newNode(dir string, port int) (*Node, error) {
	pgCtl, err := Find("pg_ctl")
	if err != nil {
		return nil, err
	}
	if entries, _ := os.ReadDir(dir); len(entries) > 0 {
		return nil, fmt.Errorf("%w: %s", ErrExists, dir)
	}
	if err := PrepareDir(dir); err != nil {
		return nil, err
	}
	return &Node{Dir: dir, Port: port, PGCtl: pgCtl}, nil
}

// appendConf appends text to a configuration file of a data directory.
func appendConf(dataDir, name, text string) error {
	f, err := os.OpenFile(filepath.Join(dataDir, name), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return fmt.Errorf("pgctl: %w", err)
	}
	if _, err := f.WriteString(text); err != nil {
		_ = f.Close()
		return fmt.Errorf("pgctl: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("pgctl: %w", err)
	}
	return nil
}

// ReadTail returns the end of a log file, for error messages.
func ReadTail(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}
