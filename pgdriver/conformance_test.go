package pgdriver_test

import (
	"context"
	"database/sql"
	neturl "net/url"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/drivertest"
	"github.com/leasehold/leasehold/internal/testdb"
	"github.com/leasehold/leasehold/pgdriver"
)

// TestConformance runs the driver conformance suite on PostgreSQL, each
// test on a fresh schema, with caller transactions of both accepted types.
func TestConformance(t *testing.T) { drivertest.RunDriver(t, pgHarness()) }

// TestClientConformance runs the client-level invariants on PostgreSQL.
func TestClientConformance(t *testing.T) { drivertest.RunClient(t, pgHarness()) }

// TestConformanceSimpleProtocol runs the driver conformance suite with
// pgx's simple protocol (default_query_exec_mode=simple_protocol), as
// behind a transaction-pooling proxy. pgx then describes no statement and
// encodes each parameter by its Go type alone: a []byte goes as bytea,
// which a $n::jsonb refuses, where a string goes as text.
func TestConformanceSimpleProtocol(t *testing.T) {
	drivertest.RunDriver(t, pgHarnessWith("default_query_exec_mode", "simple_protocol"))
}

func pgHarness() drivertest.Harness { return pgHarnessWith("", "") }

// pgHarnessWith is the PostgreSQL harness, its drivers opened with the
// connection parameter key set to value when key is not empty.
func pgHarnessWith(key, value string) drivertest.Harness {
	urls := &drivertest.Locations{}
	return drivertest.Harness{
		Name:     "postgres",
		RowLocks: true,
		HoldRow: func(t *testing.T, d driver.Driver, id int64) *drivertest.RowHold {
			return holdRow(t, urls.Get(t, d), id)
		},
		Open: func(t *testing.T) driver.Driver {
			url := withParam(t, testdb.PostgresURL(t), key, value)
			d := openPG(t, url)
			if _, err := d.Migrate(t.Context()); err != nil {
				t.Fatalf("Migrate: %v", err)
			}
			urls.Set(d, url)
			return d
		},
		OpenSecond: func(t *testing.T, d driver.Driver) driver.Driver {
			d2 := openPG(t, urls.Get(t, d))
			urls.Set(d2, urls.Get(t, d))
			return d2
		},
		ResetIDs: func(t *testing.T, d driver.Driver) {
			pgExec(t, d, "ALTER TABLE leasehold_jobs ALTER COLUMN id RESTART")
		},
		RecordMigration: func(t *testing.T, d driver.Driver, version int) {
			pgExec(t, d, "INSERT INTO leasehold_migrations (version) VALUES ($1)", version)
		},
		LoseClaim: func(t *testing.T, d driver.Driver, id int64) {
			pgExec(t, d, `UPDATE leasehold_jobs SET status = 'pending', attempt = attempt - 1, lease_owner = NULL,
				lease_until = NULL, claimed_at = NULL, heartbeat_at = NULL WHERE id = $1`, id)
		},
		TxKinds: []drivertest.TxKind{
			{Name: "pgx.Tx", Begin: func(t *testing.T, d driver.Driver) (any, func() error, func() error) {
				ctx := context.Background()
				pool, err := pgxpool.New(ctx, urls.Get(t, d))
				if err != nil {
					t.Fatalf("pgxpool.New: %v", err)
				}
				t.Cleanup(pool.Close)
				tx, err := pool.Begin(ctx)
				if err != nil {
					t.Fatalf("pgx Begin: %v", err)
				}
				rollback := func() error { return tx.Rollback(ctx) }
				t.Cleanup(func() { _ = rollback() }) // runs before pool.Close
				return tx, func() error { return tx.Commit(ctx) }, rollback
			}, Complete: func(ctx context.Context, tx any, job *leasehold.JobRow) error {
				ptx, _ := tx.(pgx.Tx)
				return pgdriver.CompleteTx(ctx, ptx, job)
			}},
			{Name: "sql.Tx", Begin: func(t *testing.T, d driver.Driver) (any, func() error, func() error) {
				db, err := sql.Open("pgx", urls.Get(t, d))
				if err != nil {
					t.Fatalf("sql.Open(pgx): %v", err)
				}
				t.Cleanup(func() { _ = db.Close() })
				tx, err := db.BeginTx(context.Background(), nil)
				if err != nil {
					t.Fatalf("sql BeginTx: %v", err)
				}
				t.Cleanup(func() { _ = tx.Rollback() }) // runs before db.Close
				return tx, tx.Commit, tx.Rollback
			}, Complete: completeSQLTx},
		},
	}
}

// lockJobSQL locks job $1's row until the transaction ends, changing
// nothing.
const lockJobSQL = `SELECT id FROM leasehold_jobs WHERE id = $1 FOR UPDATE`

// queuedSQL counts the sessions waiting for a lock the current one holds,
// directly or behind another waiter (a statement that waits for a row
// lock queues on the row's tuple lock, held by the first waiter, which
// waits for the holder's transaction).
const queuedSQL = `WITH RECURSIVE queued(pid) AS (
	SELECT pg_backend_pid()
	UNION
	SELECT l.pid FROM pg_locks l, queued q WHERE NOT l.granted AND q.pid = ANY (pg_blocking_pids(l.pid))
)
SELECT count(*) - 1 FROM queued`

// holdRow locks job id's row in a transaction on a connection of its own
// to url (the harness's HoldRow).
func holdRow(t *testing.T, url string, id int64) *drivertest.RowHold {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatalf("connect to hold job %d: %v", id, err)
	}
	t.Cleanup(func() { _ = conn.Close(ctx) })
	tx, err := conn.Begin(ctx)
	if err != nil {
		t.Fatalf("begin to hold job %d: %v", id, err)
	}
	var locked int64
	if err := tx.QueryRow(ctx, lockJobSQL, id).Scan(&locked); err != nil {
		t.Fatalf("lock job %d: %v", id, err)
	}
	return &drivertest.RowHold{
		Queued: func(ctx context.Context) (n int, err error) {
			err = tx.QueryRow(ctx, queuedSQL).Scan(&n)
			return n, err
		},
		Release: func() error { return tx.Commit(ctx) },
	}
}

// completeSQLTx is the typed completion of the sql.Tx kind.
func completeSQLTx(ctx context.Context, tx any, job *leasehold.JobRow) error {
	stx, _ := tx.(*sql.Tx)
	return pgdriver.CompleteSQLTx(ctx, stx, job)
}

// pgExec runs one statement on d's pool.
func pgExec(t *testing.T, d driver.Driver, query string, args ...any) {
	t.Helper()
	if _, err := d.(*pgdriver.Driver).Pool().Exec(t.Context(), query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

func openPG(t *testing.T, url string) *pgdriver.Driver {
	t.Helper()
	d, err := pgdriver.Open(t.Context(), url)
	if err != nil {
		t.Fatalf("pgdriver.Open: %v", err)
	}
	t.Cleanup(func() { _ = d.Close() })
	return d
}

// withParam returns rawURL with its query parameter key set to value, or
// rawURL when key is empty.
func withParam(t *testing.T, rawURL, key, value string) string {
	t.Helper()
	if key == "" {
		return rawURL
	}
	u, err := neturl.Parse(rawURL)
	if err != nil {
		t.Fatalf("test database URL: %v", err)
	}
	q := u.Query()
	q.Set(key, value)
	u.RawQuery = q.Encode()
	return u.String()
}
