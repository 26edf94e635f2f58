package driver

import (
	"context"

	"github.com/leasehold/leasehold/leasetype"
)

// EndedAttempt is the history row of an ended attempt, as far as a client
// needs it to tell what became of an outcome it wrote: the lease's
// (ID, Attempt), the Owner the row records (the lease's owner, whoever
// ended it) and the Outcome that ended it.
type EndedAttempt struct {
	ID      int64
	Attempt int
	Owner   string
	Outcome leasetype.Outcome
}

// EndedReader is implemented by drivers that can read, in one statement,
// the history rows of the ended attempts among a list of leases. Finish
// writes an attempt's history row in the same statement or transaction as
// its job update, so the row tells a client whether an outcome whose
// write it cannot account for applied: after a finish statement that
// failed (its commit reply lost, say) the retry's fence matches nothing
// either way, and after CompleteTx the safety write's refusal does not
// say whether the business transaction committed. The client reads the
// rows only on those paths, never on a normal finish.
//
// EndedAttempts returns the ended attempts among leases, in no particular
// order; a lease whose attempt has no history row, or an open one (a
// claim from before migration 008 still running), is left out. It reads
// outside any transaction and writes nothing. Without EndedReader a
// client cannot tell, and reports such outcomes as it did before. A
// driver that wraps another implements it by forwarding EndedReaderOf of
// the wrapped one.
type EndedReader interface {
	EndedAttempts(ctx context.Context, leases []LeaseRef) ([]EndedAttempt, error)
}

// EndedReaderOf returns d as an EndedReader, or nil when d does not
// implement it.
func EndedReaderOf(d Driver) EndedReader {
	if r, ok := d.(EndedReader); ok {
		return r
	}
	return nil
}
