package sqlitedriver

import (
	"context"
	"database/sql"
	"fmt"

	leasehold "github.com/leasehold/leasehold"
)

// CompleteTx completes job inside the caller's transaction tx (begun on
// the driver's DB(), or on another *sql.DB opened on the same file with
// DSN), fenced by the lease of the client running the
// handler that received ctx, so the business writes and the completion
// commit together or not at all. It needs no client variable: call it
// from the job's handler, then commit tx and return nil.
//
// It is Client.CompleteTx with tx's type checked at compile time, and
// returns the same errors: ErrLeaseLost (roll back), ErrAlreadyCompleted,
// ErrUnsupportedTx for a nil tx, and ErrNotInHandler when ctx does not come
// from a running handler or job is not that client's running job. A
// client whose driver is not a *Driver of this package (another driver, or
// a wrapper around this one) is refused with ErrUnsupportedTx: use
// Client.CompleteTx there.
func CompleteTx(ctx context.Context, tx *sql.Tx, job *leasehold.JobRow) error {
	c := leasehold.ClientFromContext(ctx)
	if c == nil {
		return fmt.Errorf("%w: sqlitedriver.CompleteTx needs the context of a running handler", leasehold.ErrNotInHandler)
	}
	if _, ok := c.Driver().(*Driver); !ok {
		return fmt.Errorf("%w: sqlitedriver.CompleteTx under a client whose driver is %T, not *sqlitedriver.Driver: use that driver's function or Client.CompleteTx",
			leasehold.ErrUnsupportedTx, c.Driver())
	}
	return c.CompleteTx(ctx, tx, job)
}
