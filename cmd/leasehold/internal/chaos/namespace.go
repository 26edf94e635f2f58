package chaos

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver

	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
)

// namespace is the run's own corner of the database, so that its checks
// see only its jobs and its ledger: a new schema on PostgreSQL, a new file
// on SQLite.
type namespace struct {
	base   cli.Target // as given
	target cli.Target // the namespace
	schema string     // PostgreSQL
	tmpDir string     // SQLite without --db: removed with the file
	keep   bool
}

func newNamespace(ctx context.Context, t cli.Target, run string) (*namespace, error) {
	ns := &namespace{base: t}
	if t.Dialect == cli.Postgres {
		ns.schema = "leasehold_chaos_" + run
		if err := execOn(ctx, t.URL, "CREATE SCHEMA "+ns.schema); err != nil {
			return nil, err
		}
		u, err := url.Parse(t.URL)
		if err != nil {
			return nil, fmt.Errorf("chaos: database URL: %w", err)
		}
		q := u.Query()
		q.Set("search_path", ns.schema)
		u.RawQuery = q.Encode()
		ns.target = cli.Target{Dialect: cli.Postgres, URL: u.String()}
		return ns, nil
	}
	path := t.Path
	if t.Default {
		dir, err := os.MkdirTemp("", "leasehold-chaos-")
		if err != nil {
			return nil, fmt.Errorf("chaos: %w", err)
		}
		ns.tmpDir, path = dir, filepath.Join(dir, "chaos.db")
	} else if err := checkNewFile(t); err != nil {
		return nil, err
	} else {
		ns.keep = true // a file the user named is theirs to remove
	}
	ns.target = cli.Target{Dialect: cli.SQLite, Path: path}
	return ns, nil
}

// checkNewFile refuses an SQLite target the user named that exists: the
// run's invariant checks need a database of its own.
func checkNewFile(t cli.Target) error {
	if t.Dialect != cli.SQLite || t.Default {
		return nil
	}
	if _, err := os.Stat(t.Path); !errors.Is(err, fs.ErrNotExist) {
		return cli.Usagef("chaos needs a new SQLite file, and %s exists (remove it or name another)", t.Path)
	}
	return nil
}

// execOn runs one statement on a short-lived connection to url.
func execOn(ctx context.Context, rawURL, stmt string) error {
	db, err := sql.Open("pgx", rawURL)
	if err != nil {
		return fmt.Errorf("chaos: open database: %w", err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if _, err := db.ExecContext(ctx, stmt); err != nil {
		return fmt.Errorf("chaos: %s: %w", stmt, err)
	}
	return nil
}

// workerURL is the database location a worker gets: on PostgreSQL its
// sessions carry the owner as application_name, so that they can be found
// in pg_stat_activity (and terminated).
func (ns *namespace) workerURL(owner string) string {
	if ns.target.Dialect != cli.Postgres {
		return "sqlite:" + ns.target.Path
	}
	u, _ := url.Parse(ns.target.URL) // parsed in newNamespace
	q := u.Query()
	q.Set("application_name", owner)
	u.RawQuery = q.Encode()
	return u.String()
}

func (ns *namespace) describe() string {
	if ns.schema != "" {
		return fmt.Sprintf("%s, schema %s", ns.base, ns.schema)
	}
	return ns.target.String()
}

// keptAs names what was kept for inspection, or "".
func (ns *namespace) keptAs() string {
	switch {
	case !ns.keep:
		return ""
	case ns.schema != "":
		return "schema " + ns.schema
	default:
		return ns.target.Path
	}
}

// close removes the namespace unless it is kept.
func (ns *namespace) close() {
	if ns.keep {
		return
	}
	if ns.schema != "" {
		_ = execOn(context.Background(), ns.base.URL, "DROP SCHEMA "+ns.schema+" CASCADE")
		return
	}
	if ns.tmpDir != "" {
		_ = os.RemoveAll(ns.tmpDir)
	}
}
