package sqlitedriver

import (
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/testdb"
)

func TestMigrateTwice(t *testing.T) {
	d := openTest(t)
	ctx := testCtx(t)
	if _, err := d.Migrate(ctx); err != nil {
		t.Fatalf("second Migrate: %v", err)
	}
	var n int
	if err := d.DB().QueryRowContext(ctx, `SELECT count(*) FROM leasehold_migrations`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	ms, err := loadMigrations()
	if err != nil {
		t.Fatal(err)
	}
	if n != len(ms) {
		t.Fatalf("leasehold_migrations has %d rows, want %d", n, len(ms))
	}
}

func TestMigrateConcurrentDrivers(t *testing.T) {
	path := testdb.SQLitePath(t)
	const n = 4
	drivers := make([]*Driver, n)
	for i := range drivers {
		d, err := Open(path)
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { _ = d.Close() })
		drivers[i] = d
	}
	ctx := testCtx(t)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	start := make(chan struct{})
	for _, d := range drivers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			_, err := d.Migrate(ctx)
			errs <- err
		}()
	}
	close(start)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent Migrate: %v", err)
		}
	}
	insertN(t, drivers[0], 3)
	if got := claim(t, drivers[1], "w", 10, time.Minute, false); len(got) != 3 {
		t.Fatalf("claimed %d jobs after concurrent migrations, want 3", len(got))
	}
}

func TestPragmas(t *testing.T) {
	d := openTest(t)
	ctx := testCtx(t)
	for pragma, want := range map[string]string{
		"journal_mode": "wal", "synchronous": "2", "foreign_keys": "1", "busy_timeout": "10000",
	} {
		var got string
		if err := d.DB().QueryRowContext(ctx, "PRAGMA "+pragma).Scan(&got); err != nil {
			t.Fatalf("PRAGMA %s: %v", pragma, err)
		}
		if got != want {
			t.Errorf("PRAGMA %s = %q, want %q", pragma, got, want)
		}
	}
}
