package payments

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
)

// Dialect selects the SQL of the ledger.
type Dialect string

// The supported dialects.
const (
	Postgres Dialect = "postgres"
	SQLite   Dialect = "sqlite"
)

// LedgerTable is the table of recorded charges.
const LedgerTable = "payments_ledger"

const pgLedgerDDL = `CREATE TABLE IF NOT EXISTS payments_ledger (
    payment_id   text        PRIMARY KEY,
    charge_id    text        NOT NULL,
    job_id       bigint      NOT NULL,
    attempt      integer     NOT NULL,
    owner        text        NOT NULL,
    amount_cents bigint      NOT NULL,
    currency     text        NOT NULL,
    recorded_at  timestamptz NOT NULL DEFAULT now()
)`

const sqliteLedgerDDL = `CREATE TABLE IF NOT EXISTS payments_ledger (
    payment_id   TEXT    PRIMARY KEY,
    charge_id    TEXT    NOT NULL,
    job_id       INTEGER NOT NULL,
    attempt      INTEGER NOT NULL,
    owner        TEXT    NOT NULL,
    amount_cents INTEGER NOT NULL,
    currency     TEXT    NOT NULL,
    recorded_at  TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
) STRICT`

// Entry is one recorded charge.
type Entry struct {
	PaymentID   string
	ChargeID    string
	JobID       int64
	Attempt     int
	Owner       string
	AmountCents int64
	Currency    string
}

// Ledger is the application's table of recorded charges, one row per
// payment (the primary key), written in the same transaction as the
// payment job's fenced completion.
type Ledger struct {
	db      *sql.DB
	dialect Dialect
	unkeyed bool // no primary key on payment_id (NewUnkeyedLedger)
}

// NewLedger returns the ledger in db. For SQLite, db must be the
// leasehold driver's own handle (sqlitedriver.Driver.DB), so that the
// ledger write and CompleteTx share its single connection; for PostgreSQL,
// a database/sql handle opened with the pgx stdlib driver.
func NewLedger(db *sql.DB, dialect Dialect) (*Ledger, error) {
	if db == nil {
		return nil, fmt.Errorf("payments: nil *sql.DB")
	}
	if dialect != Postgres && dialect != SQLite {
		return nil, fmt.Errorf("payments: unknown dialect %q", dialect)
	}
	return &Ledger{db: db, dialect: dialect}, nil
}

// NewUnkeyedLedger is NewLedger for a ledger whose Migrate creates the
// table without the primary key on payment_id, so that a second row for a
// payment is stored instead of refused. The chaos harness uses it: there
// only the queue's fence may stand between a late worker and a second
// ledger row, so that a fencing failure shows as a duplicate.
func NewUnkeyedLedger(db *sql.DB, dialect Dialect) (*Ledger, error) {
	l, err := NewLedger(db, dialect)
	if err != nil {
		return nil, err
	}
	l.unkeyed = true
	return l, nil
}

// ddl returns the statement that creates the table.
func (l *Ledger) ddl() string {
	ddl := pgLedgerDDL
	if l.dialect == SQLite {
		ddl = sqliteLedgerDDL
	}
	if l.unkeyed {
		ddl = strings.Replace(ddl, "PRIMARY KEY", "NOT NULL", 1)
	}
	return ddl
}

// DB returns the ledger's database handle.
func (l *Ledger) DB() *sql.DB { return l.db }

// Migrate creates the ledger table if it does not exist. Concurrent calls
// are safe.
func (l *Ledger) Migrate(ctx context.Context) error {
	_, err := l.Ensure(ctx)
	return err
}

// Ensure creates the ledger table if it does not exist and reports whether
// it did, so that a worker can say it created an application table.
// Concurrent calls are safe.
func (l *Ledger) Ensure(ctx context.Context) (created bool, err error) {
	if l.dialect == SQLite {
		return l.ensureSQLite(ctx)
	}
	tx, err := l.db.BeginTx(ctx, nil)
	if err != nil {
		return false, fmt.Errorf("payments: create ledger: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	// Concurrent CREATE TABLE IF NOT EXISTS can collide in the catalog.
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext('leasehold.payments_ledger'))`); err != nil {
		return false, fmt.Errorf("payments: create ledger: %w", err)
	}
	var exists bool
	if err := tx.QueryRowContext(ctx, `SELECT to_regclass('`+LedgerTable+`') IS NOT NULL`).Scan(&exists); err != nil {
		return false, fmt.Errorf("payments: create ledger: %w", err)
	}
	if _, err := tx.ExecContext(ctx, l.ddl()); err != nil {
		return false, fmt.Errorf("payments: create ledger: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return false, fmt.Errorf("payments: create ledger: %w", err)
	}
	return !exists, nil
}

// ensureSQLite is Ensure on SQLite, where the table's absence is read
// before the CREATE (two processes creating it at the same instant may
// both report the creation).
func (l *Ledger) ensureSQLite(ctx context.Context) (bool, error) {
	var n int64
	q := `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '` + LedgerTable + `'`
	if err := l.db.QueryRowContext(ctx, q).Scan(&n); err != nil {
		return false, fmt.Errorf("payments: create ledger: %w", err)
	}
	if _, err := l.db.ExecContext(ctx, l.ddl()); err != nil {
		return false, fmt.Errorf("payments: create ledger: %w", err)
	}
	return n == 0, nil
}

// insert records e inside tx.
func (l *Ledger) insert(ctx context.Context, tx *sql.Tx, e Entry) error {
	q := `INSERT INTO payments_ledger (payment_id, charge_id, job_id, attempt, owner, amount_cents, currency)
VALUES ($1, $2, $3, $4, $5, $6, $7)`
	if l.dialect == SQLite {
		q = `INSERT INTO payments_ledger (payment_id, charge_id, job_id, attempt, owner, amount_cents, currency)
VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)`
	}
	_, err := tx.ExecContext(ctx, q, e.PaymentID, e.ChargeID, e.JobID, e.Attempt, e.Owner, e.AmountCents, e.Currency)
	if err != nil {
		return fmt.Errorf("payments: record %s in the ledger: %w", e.PaymentID, err)
	}
	return nil
}

// Count returns the number of recorded payments whose id starts with
// prefix ("" counts them all).
func (l *Ledger) Count(ctx context.Context, prefix string) (int64, error) {
	q := `SELECT count(*) FROM payments_ledger WHERE substr(payment_id, 1, length($1)) = $1`
	if l.dialect == SQLite {
		q = `SELECT count(*) FROM payments_ledger WHERE substr(payment_id, 1, length(?1)) = ?1`
	}
	var n int64
	if err := l.db.QueryRowContext(ctx, q, prefix).Scan(&n); err != nil {
		return 0, fmt.Errorf("payments: count ledger: %w", err)
	}
	return n, nil
}

// recordedAmong returns which of ids are recorded.
func (l *Ledger) recordedAmong(ctx context.Context, ids []string) (map[string]bool, error) {
	out := map[string]bool{}
	if len(ids) == 0 {
		return out, nil
	}
	list, err := json.Marshal(ids)
	if err != nil {
		return nil, fmt.Errorf("payments: read ledger: %w", err)
	}
	q := `SELECT payment_id FROM payments_ledger WHERE payment_id IN (SELECT jsonb_array_elements_text($1::jsonb))`
	if l.dialect == SQLite {
		q = `SELECT payment_id FROM payments_ledger WHERE payment_id IN (SELECT value FROM json_each(?1))`
	}
	return l.readIDs(ctx, out, q, string(list))
}

// Recorded returns the ids of the recorded payments whose id starts with
// prefix.
func (l *Ledger) Recorded(ctx context.Context, prefix string) (map[string]bool, error) {
	q := `SELECT payment_id FROM payments_ledger WHERE substr(payment_id, 1, length($1)) = $1`
	if l.dialect == SQLite {
		q = `SELECT payment_id FROM payments_ledger WHERE substr(payment_id, 1, length(?1)) = ?1`
	}
	return l.readIDs(ctx, map[string]bool{}, q, prefix)
}

// readIDs adds to out the payment ids that q selects.
func (l *Ledger) readIDs(ctx context.Context, out map[string]bool, q string, arg any) (map[string]bool, error) {
	rows, err := l.db.QueryContext(ctx, q, arg)
	if err != nil {
		return nil, fmt.Errorf("payments: read ledger: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, fmt.Errorf("payments: read ledger: %w", err)
		}
		out[id] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("payments: read ledger: %w", err)
	}
	return out, nil
}
