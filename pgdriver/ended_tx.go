package pgdriver

import (
	"context"
	"fmt"

	leasehold "github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

var _ driver.TxEndedReader = (*Driver)(nil)

// EndedAttemptsTx implements driver.TxEndedReader: it runs
// endedAttemptsSQL, as EndedAttempts does, in the caller's transaction tx
// (a pgx.Tx, a savepoint of one included, or a *sql.Tx), so that it sees
// a completion tx holds uncommitted. In a transaction aborted by an
// earlier error it fails (SQLSTATE 25P02), as any statement there does.
func (d *Driver) EndedAttemptsTx(ctx context.Context, tx any, leases []driver.LeaseRef) ([]driver.EndedAttempt, error) {
	if tx == nil {
		return nil, fmt.Errorf("%w: no transaction to read the history in", leasehold.ErrUnsupportedTx)
	}
	q, err := d.querierFor(tx)
	if err != nil {
		return nil, err
	}
	if len(leases) == 0 {
		return nil, nil
	}
	ids, attempts := leaseArrays(leases)
	out, err := collect(ctx, q, scanEndedAttempt, endedAttemptsSQL, ids, attempts)
	if err != nil {
		return nil, fmt.Errorf("pgdriver: read ended attempts in the caller's transaction: %w", err)
	}
	return out, nil
}

// leaseArrays returns the ids and attempts of leases, pairwise, as
// endedAttemptsSQL takes them.
func leaseArrays(leases []driver.LeaseRef) (ids []int64, attempts []int32) {
	ids = make([]int64, len(leases))
	attempts = make([]int32, len(leases))
	for i, l := range leases {
		ids[i], attempts[i] = l.ID, int32(l.Attempt)
	}
	return ids, attempts
}
