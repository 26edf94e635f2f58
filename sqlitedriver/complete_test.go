package sqlitedriver_test

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/pgdriver/pgtest"
	"github.com/leasehold/leasehold/sqlitedriver"
)

type completeArgs struct{}

func (completeArgs) Kind() string { return "complete" }

// TestCompleteTxRefusesPostgresClient: sqlitedriver.CompleteTx from the
// handler of a client on PostgreSQL is refused with ErrUnsupportedTx
// naming the client's driver, even with a *sql.Tx that PostgreSQL's
// driver would accept (one from the pgx stdlib driver).
func TestCompleteTxRefusesPostgresClient(t *testing.T) {
	url := pgtest.URL(t)
	d := pgtest.OpenURL(t, url)
	db, err := sql.Open("pgx", url)
	if err != nil {
		t.Fatalf("sql.Open: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	got := make(chan error, 1)
	ws := leasehold.NewWorkers()
	err = leasehold.AddWorker(ws, leasehold.WorkFunc[completeArgs](func(ctx context.Context, job *leasehold.Job[completeArgs]) error {
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			got <- err
			return err
		}
		got <- sqlitedriver.CompleteTx(ctx, tx, job.JobRow)
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
		if !errors.Is(err, leasehold.ErrUnsupportedTx) || !strings.Contains(err.Error(), "*pgdriver.Driver") {
			t.Errorf("sqlitedriver.CompleteTx under a PostgreSQL client = %v, want ErrUnsupportedTx naming *pgdriver.Driver", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("timed out waiting for the handler")
	}
}
