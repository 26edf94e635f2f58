package sqlitedriver

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/leasetype"
)

var _ driver.TxEndedReader = (*Driver)(nil)

// EndedAttemptsTx implements driver.TxEndedReader: it runs
// endedAttemptsSQL, as EndedAttempts does, in the caller's transaction tx
// (a *sql.Tx), so that it sees a completion tx holds uncommitted. A
// *sql.Tx has no nested transaction object: a savepoint the caller opened
// with SQL runs in the same *sql.Tx, which CompleteTx tells by its
// identity already, so this read adds the case of a completion whose own
// transaction committed before tx read the file.
func (d *Driver) EndedAttemptsTx(ctx context.Context, tx any, leases []driver.LeaseRef) ([]driver.EndedAttempt, error) {
	t, err := asTx(tx)
	if err != nil {
		return nil, err
	}
	if t == nil {
		return nil, fmt.Errorf("%w: no transaction to read the history in", leasehold.ErrUnsupportedTx)
	}
	if len(leases) == 0 {
		return nil, nil
	}
	arr, err := leasePairsParam(leases)
	if err != nil {
		return nil, err
	}
	out, err := scanEndedRows(d.query(ctx, t, endedAttemptsSQL, arr))
	if err != nil {
		return nil, d.wrapErr(fmt.Errorf("sqlitedriver: read ended attempts in the caller's transaction: %w", err))
	}
	return out, nil
}

// scanEndedRows scans the rows of endedAttemptsSQL, and closes them.
func scanEndedRows(rows *sql.Rows, err error) ([]driver.EndedAttempt, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []driver.EndedAttempt
	for rows.Next() {
		var (
			a       driver.EndedAttempt
			outcome string
		)
		if err := rows.Scan(&a.ID, &a.Attempt, &a.Owner, &outcome); err != nil {
			return nil, err
		}
		a.Outcome = leasetype.Outcome(outcome)
		out = append(out, a)
	}
	return out, rows.Err()
}
