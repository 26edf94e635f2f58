package pgdriver

import (
	"context"
	"errors"
	neturl "net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/leasehold/leasehold/internal/testdb"
)

func TestMigrateConcurrentAndTwice(t *testing.T) {
	url := testdb.PostgresURL(t)
	ctx := testCtx(t)
	drivers := make([]*Driver, 2)
	for i := range drivers {
		d, err := Open(ctx, url)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { _ = d.Close() })
		drivers[i] = d
	}
	var wg sync.WaitGroup
	errs := make([]error, len(drivers))
	for i, d := range drivers {
		wg.Go(func() { _, errs[i] = d.Migrate(ctx) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("concurrent Migrate %d: %v", i, err)
		}
	}
	for range 2 {
		if _, err := drivers[0].Migrate(ctx); err != nil {
			t.Fatalf("Migrate again: %v", err)
		}
	}
	var versions int
	if err := drivers[0].pool.QueryRow(ctx, "SELECT count(*) FROM leasehold_migrations").Scan(&versions); err != nil {
		t.Fatal(err)
	}
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	if versions != len(ms) {
		t.Fatalf("leasehold_migrations has %d rows, want %d", versions, len(ms))
	}
}

func TestNewDoesNotCloseCallerPool(t *testing.T) {
	url := testdb.PostgresURL(t)
	ctx := testCtx(t)
	pool, err := pgxpool.New(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	d, err := New(pool)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	if _, err := d.Migrate(ctx); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	if got := d.hbPool.Config().MaxConns; got != heartbeatPoolSize {
		t.Fatalf("heartbeat pool MaxConns = %d, want %d", got, heartbeatPoolSize)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := d.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if err := pool.Ping(ctx); err != nil {
		t.Fatalf("caller's pool closed by Driver.Close: %v", err)
	}
	if _, err := d.hbPool.Acquire(context.Background()); err == nil {
		t.Fatal("heartbeat pool still open after Close")
	}
}

// TestMigrateUpToDateNeedsNoDDL: on a schema at the latest version,
// Migrate changes nothing and needs no right to create, so a worker's role
// that may only read and write the tables can run it (leasehold work
// migrates at start).
func TestMigrateUpToDateNeedsNoDDL(t *testing.T) {
	d, url := newTestDriver(t)
	ctx := testCtx(t)
	var schema string
	if err := d.pool.QueryRow(ctx, "SELECT current_schema()").Scan(&schema); err != nil {
		t.Fatal(err)
	}
	role := schema + "_dml" // the schema's name is random: so is the role's
	for _, q := range []string{
		"CREATE ROLE " + role + " LOGIN",
		"GRANT USAGE ON SCHEMA " + schema + " TO " + role,
		"GRANT SELECT, INSERT, UPDATE, DELETE ON ALL TABLES IN SCHEMA " + schema + " TO " + role,
	} {
		if _, err := d.pool.Exec(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	t.Cleanup(func() {
		for _, q := range []string{"DROP OWNED BY " + role, "DROP ROLE " + role} {
			_, _ = d.pool.Exec(context.Background(), q)
		}
	})
	u, err := neturl.Parse(url)
	if err != nil {
		t.Fatal(err)
	}
	u.User = neturl.User(role)
	dml, err := Open(ctx, u.String())
	if err != nil {
		t.Fatalf("Open as %s: %v", role, err)
	}
	defer dml.Close()
	res, err := dml.Migrate(ctx)
	if err != nil {
		t.Fatalf("Migrate as a role without CREATE: %v", err)
	}
	if res.Applied != 0 || res.From != res.To || res.To == 0 {
		t.Fatalf("Migrate of an up-to-date schema: %+v", res)
	}
}

// TestMigrateGivesWayToALongTransaction: a migration that needs the lock
// of leasehold_jobs while another transaction holds it (one that
// inserted a job and stays open) waits at most its lock timeout at each
// try, so the jobs' other writers, queued behind it, get through between
// tries; past its tries it fails naming the wait, and once the
// transaction ends it applies.
func TestMigrateGivesWayToALongTransaction(t *testing.T) {
	ctx := testCtx(t)
	url := testdb.PostgresURL(t)
	d, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = d.Close() })
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	err = pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		for _, m := range ms {
			if m.version > 12 { // 013 adds a trigger to leasehold_jobs
				break
			}
			if _, _, err := applyMigration(ctx, tx, m, latestVersion(ms), 0); err != nil {
				return err
			}
		}
		_, err := tx.Exec(ctx, `INSERT INTO leasehold_jobs (kind, queue, max_attempts, args, uuid)
			VALUES ('k', 'q', 3, '{}', gen_random_uuid())`)
		return err
	})
	if err != nil {
		t.Fatalf("set up version 12: %v", err)
	}
	holder, err := d.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = holder.Rollback(ctx) }()
	if _, err := holder.Exec(ctx, `INSERT INTO leasehold_jobs (kind, queue, max_attempts, args, uuid)
		VALUES ('k', 'q', 3, '{}', gen_random_uuid())`); err != nil {
		t.Fatal(err)
	}
	d.migLock = migrationLock{Timeout: 200 * time.Millisecond, Pause: 300 * time.Millisecond, Tries: 3}
	migrated := make(chan error, 1)
	mctx, cancel := context.WithTimeout(ctx, 20*time.Second)
	defer cancel()
	go func() { _, err := d.Migrate(mctx); migrated <- err }()
	// A job's write while the migration waits: it queues behind the
	// migration's lock request, and gets through when that times out.
	time.Sleep(100 * time.Millisecond)
	wctx, wcancel := context.WithTimeout(ctx, 10*time.Second)
	defer wcancel()
	if _, err := d.pool.Exec(wctx, "UPDATE leasehold_jobs SET priority = 1 WHERE id = 1"); err != nil {
		t.Errorf("a job's write while the migration waited: %v; want it through", err)
	}
	err = <-migrated
	var pe *pgconn.PgError
	if !errors.As(err, &pe) || pe.Code != lockNotAvailable || !strings.Contains(err.Error(), "through 3 tries") {
		t.Fatalf("Migrate behind a long transaction = %v; want it to give up after 3 tries of lock_timeout", err)
	}
	if err := holder.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	res, err := d.Migrate(ctx)
	if err != nil || res.To != latestVersion(ms) {
		t.Fatalf("Migrate once the transaction ended = %+v, %v", res, err)
	}
}
