package pgdriver_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/testdb"
	"github.com/leasehold/leasehold/pgdriver"
	"github.com/leasehold/leasehold/sqlitedriver"
)

type completeArgs struct{}

func (completeArgs) Kind() string { return "complete" }

// TestCompleteSQLTxRefusesSQLiteClient: pgdriver.CompleteSQLTx from the
// handler of a client on SQLite is refused with ErrUnsupportedTx naming
// the client's driver, even with a *sql.Tx that SQLite's driver would
// accept: the typed function is PostgreSQL's. The job is not completed by
// it (the handler's nil return completes it afterwards).
func TestCompleteSQLTxRefusesSQLiteClient(t *testing.T) {
	d, err := sqlitedriver.Open(testdb.SQLitePath(t))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = d.Close() })
	if _, err := d.Migrate(t.Context()); err != nil {
		t.Fatalf("Migrate: %v", err)
	}
	got := make(chan error, 1)
	ws := leasehold.NewWorkers()
	err = leasehold.AddWorker(ws, leasehold.WorkFunc[completeArgs](func(ctx context.Context, job *leasehold.Job[completeArgs]) error {
		tx, err := d.DB().BeginTx(ctx, nil)
		if err != nil {
			got <- err
			return err
		}
		got <- pgdriver.CompleteSQLTx(ctx, tx, job.JobRow)
		return tx.Rollback()
	}))
	if err != nil {
		t.Fatalf("AddWorker: %v", err)
	}
	c, err := leasehold.NewClient(leasehold.Config{Driver: d, Workers: ws, PollInterval: 10 * time.Millisecond,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	if err := c.Start(t.Context()); err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { _ = c.Stop(context.Background()) })
	if _, err := c.Insert(t.Context(), completeArgs{}, nil); err != nil {
		t.Fatalf("Insert: %v", err)
	}
	select {
	case err := <-got:
		if !errors.Is(err, leasehold.ErrUnsupportedTx) || !strings.Contains(err.Error(), "*sqlitedriver.Driver") {
			t.Errorf("pgdriver.CompleteSQLTx under an SQLite client = %v, want ErrUnsupportedTx naming *sqlitedriver.Driver", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("timed out waiting for the handler")
	}
	if s := c.Stats(); s.FinishRefused != 0 {
		t.Errorf("Stats().FinishRefused = %d, want 0: nothing was written", s.FinishRefused)
	}
}
