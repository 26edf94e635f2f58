package work

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/jobkinds"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/testdb"
	"github.com/leasehold/leasehold/pgdriver"
)

// TestOwnerInUseWarns: before it starts, a worker given --owner warns
// when a lease of that name is still live (another running process uses
// the name, whose jobs this one would release and run again, or this
// name's previous process stopped less than a lease TTL ago), and says
// nothing when the name holds no lease, or only expired ones. It warns
// and never refuses: a restarted worker of the same name must start.
func TestOwnerInUseWarns(t *testing.T) {
	for _, d := range []struct {
		name string
		url  func(t *testing.T) string
	}{
		{"sqlite", func(t *testing.T) string { return "sqlite:" + testdb.SQLitePath(t) }},
		{"postgres", func(t *testing.T) string { return testdb.PostgresURL(t) }},
	} {
		t.Run(d.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
			defer cancel()
			db := openMigrated(ctx, t, d.url(t))
			c, err := leasehold.NewClient(leasehold.Config{Driver: db.Driver})
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if _, err := c.Insert(ctx, jobkinds.SleepArgs{Duration: "1h"}, &leasehold.InsertOpts{Queue: "q"}); err != nil {
					t.Fatal(err)
				}
			}
			warns := func(owner string) string {
				t.Helper()
				var buf bytes.Buffer
				o := Options{DB: db, Owner: owner, TTL: time.Minute, Logger: slog.New(slog.NewTextHandler(&buf, nil))}
				warnOwnerInUse(ctx, c, o)
				return buf.String()
			}
			if out := warns("shared"); out != "" {
				t.Errorf("no lease at all: logged %q, want nothing", out)
			}
			// A lease of "stale" that has expired: its process is gone.
			stale := claim(ctx, t, db.Driver, "stale", time.Millisecond)
			for {
				now, err := db.Driver.Now(ctx)
				if err != nil {
					t.Fatal(err)
				}
				if now.After(stale.LeaseUntil) {
					break
				}
				time.Sleep(10 * time.Millisecond)
			}
			if out := warns("stale"); out != "" {
				t.Errorf("only an expired lease of the name: logged %q, want nothing", out)
			}
			claim(ctx, t, db.Driver, "shared", time.Hour)
			out := warns("shared")
			if !strings.Contains(out, "level=WARN") || !strings.Contains(out, "owner=shared") ||
				!strings.Contains(out, "another running process") || !strings.Contains(out, "less than a lease TTL ago") {
				t.Errorf("a live lease of the name: logged %q, want a warning naming owner shared and both causes", out)
			}
			if out := warns("other"); out != "" {
				t.Errorf("a live lease of another name: logged %q, want nothing", out)
			}
			if out := warns(""); out != "" {
				t.Errorf("no --owner (a fresh host-pid-random name): logged %q, want nothing", out)
			}
		})
	}
}

// openMigrated opens url as the commands do, creating an SQLite file,
// migrates it, and closes it when the test ends.
func openMigrated(ctx context.Context, t *testing.T, url string) *cli.DB {
	t.Helper()
	target, err := cli.ParseTarget(url)
	if err != nil {
		t.Fatal(err)
	}
	db, err := cli.Open(ctx, target, cli.OpenOptions{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = db.Close() })
	if _, err := db.Driver.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	return db
}

// claim leases one pending job of queue q to owner for ttl, as a
// worker's claim does.
func claim(ctx context.Context, t *testing.T, d driver.Driver, owner string, ttl time.Duration) *leasehold.JobRow {
	t.Helper()
	jobs, err := d.Claim(ctx, &driver.ClaimParams{Queue: "q", Kinds: []string{jobkinds.SleepKind}, Owner: owner, TTL: ttl, Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 {
		t.Fatalf("claimed %d jobs for %s, want 1", len(jobs), owner)
	}
	return jobs[0]
}

// TestOwnerCheckTimeoutLogged: a look for live leases of --owner that
// runs out of its own time (the jobs table locked) is logged, as every
// failed look is; only a stop asked for meanwhile stays silent.
func TestOwnerCheckTimeoutLogged(t *testing.T) {
	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	defer cancel()
	db := openMigrated(ctx, t, testdb.PostgresURL(t))
	c, err := leasehold.NewClient(leasehold.Config{Driver: db.Driver})
	if err != nil {
		t.Fatal(err)
	}
	tx, err := db.Driver.(*pgdriver.Driver).Pool().Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(context.Background()) }()
	if _, err := tx.Exec(ctx, "LOCK TABLE leasehold_jobs IN ACCESS EXCLUSIVE MODE"); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	o := Options{DB: db, Owner: "shared", TTL: time.Minute, Logger: slog.New(slog.NewTextHandler(&buf, nil))}
	warnOwnerInUse(ctx, c, o)
	if !strings.Contains(buf.String(), "could not check whether --owner is in use") {
		t.Errorf("the owner check timed out and logged %q, want the failed look", buf.String())
	}
}
