package pgdriver

import (
	"context"
	"sync"
	"testing"

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
