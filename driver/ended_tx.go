package driver

import "context"

// TxEndedReader is implemented by drivers that can read the history rows
// of ended attempts in a caller's transaction, as EndedReader reads them
// outside one. A read in tx sees what tx wrote and has not committed,
// also through another object of the same transaction (a pgx savepoint
// of tx, released or still open, or tx itself after a Finish in one of its
// savepoints), and the completions that committed before, as far as tx's
// snapshot shows them.
//
// A client reads through it when a CompleteTx's fenced write matches no
// row for a lease that an earlier CompleteTx completed: the history row,
// read in the caller's transaction, tells a job whose completion that
// transaction already holds (ErrAlreadyCompleted) from a lease taken over
// (ErrLeaseLost), which a read on another connection cannot, as it does
// not see the caller's uncommitted writes.
//
// EndedAttemptsTx returns what EndedAttempts would return if tx committed
// now, read in tx, which must be a transaction the driver's Finish accepts
// (a nil one is refused with ErrUnsupportedTx). It writes nothing. A read
// that fails (in a transaction aborted by an earlier error, say) leaves tx
// as any failed statement does, and the caller is to decide without it. A
// driver that wraps another implements it by forwarding TxEndedReaderOf
// of the wrapped one.
type TxEndedReader interface {
	EndedAttemptsTx(ctx context.Context, tx any, leases []LeaseRef) ([]EndedAttempt, error)
}

// TxEndedReaderOf returns d as a TxEndedReader, or nil when d does not
// implement it.
func TxEndedReaderOf(d Driver) TxEndedReader {
	if r, ok := d.(TxEndedReader); ok {
		return r
	}
	return nil
}
