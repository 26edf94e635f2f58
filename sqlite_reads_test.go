package leasehold_test

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/sqlitedriver"
)

type readsArgs struct{ N int }

func (readsArgs) Kind() string { return "reads" }

// TestSQLiteReadsBesideWaitingWrite: while another connection's
// transaction holds the SQLite file's write lock and a write of the
// driver's waits for it (as a heartbeat or a claim does behind an
// application's transaction), the driver's reads (GetJob, ListJobs, the
// clock) answer at once on its read-only connections, instead of waiting
// behind that write for the whole of their context.
func TestSQLiteReadsBesideWaitingWrite(t *testing.T) {
	ctx := context.Background()
	path := t.TempDir() + "/jobs.db"
	d, err := sqlitedriver.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer d.Close()
	if _, err := d.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	c, err := leasehold.NewClient(leasehold.Config{Driver: d})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Insert(ctx, readsArgs{N: 1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	app, err := sql.Open("sqlite", sqlitedriver.DSN(path))
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	tx, err := app.BeginTx(ctx, nil) // IMMEDIATE (DSN): the file's write lock
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	wctx, cancel := context.WithCancel(ctx)
	writing := make(chan error, 1)
	go func() { _, err := c.Insert(wctx, readsArgs{N: 2}, nil); writing <- err }()
	defer func() { cancel(); <-writing }()
	time.Sleep(200 * time.Millisecond) // the insert now waits for the lock
	reads := map[string]func(context.Context) error{
		"GetJob":   func(ctx context.Context) error { _, err := c.GetJob(ctx, res.Job.ID); return err },
		"ListJobs": func(ctx context.Context) error { _, err := c.ListJobs(ctx, &leasehold.ListParams{}); return err },
		"Now":      func(ctx context.Context) error { _, err := d.Now(ctx); return err },
	}
	for name, read := range reads {
		rctx, rcancel := context.WithTimeout(ctx, 5*time.Second)
		if err := read(rctx); err != nil {
			t.Errorf("%s while a driver write waits for another connection's write lock: %v", name, err)
		}
		rcancel()
	}
	select {
	case err := <-writing:
		t.Fatalf("the insert ended while the lock was held (%v): nothing was waiting behind it", err)
	default:
	}
}
