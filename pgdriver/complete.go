package pgdriver

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/jackc/pgx/v5"
	leasehold "github.com/leasehold/leasehold"
)

// CompleteTx completes job inside the caller's pgx transaction tx, fenced
// by the lease of the client running the handler that received ctx, so the
// business writes and the completion commit together or not at all. It
// needs no client variable: call it from the job's handler, then commit tx
// and return nil.
//
// It is Client.CompleteTx with tx's type checked at compile time, and
// returns the same errors: ErrLeaseLost (roll back), ErrAlreadyCompleted,
// ErrUnsupportedTx for a nil tx, and ErrNotInHandler when ctx does not come
// from a running handler or job is not that client's running job. A
// client whose driver is not a *Driver of this package (another driver, or
// a wrapper around this one) is refused with ErrUnsupportedTx: use
// Client.CompleteTx there.
func CompleteTx(ctx context.Context, tx pgx.Tx, job *leasehold.JobRow) error {
	c, err := handlerClient(ctx, "CompleteTx")
	if err != nil {
		return err
	}
	return c.CompleteTx(ctx, tx, job) // a nil tx arrives as a nil any: refused
}

// CompleteSQLTx is CompleteTx for a *sql.Tx from a database/sql DB opened
// with the pgx stdlib driver (github.com/jackc/pgx/v5/stdlib). A nil tx is
// refused with ErrUnsupportedTx.
func CompleteSQLTx(ctx context.Context, tx *sql.Tx, job *leasehold.JobRow) error {
	c, err := handlerClient(ctx, "CompleteSQLTx")
	if err != nil {
		return err
	}
	return c.CompleteTx(ctx, tx, job)
}

// handlerClient returns the client running the handler that received
// ctx, provided its driver is this package's; fn names the caller.
func handlerClient(ctx context.Context, fn string) (*leasehold.Client, error) {
	c := leasehold.ClientFromContext(ctx)
	if c == nil {
		return nil, fmt.Errorf("%w: pgdriver.%s needs the context of a running handler", leasehold.ErrNotInHandler, fn)
	}
	if _, ok := c.Driver().(*Driver); !ok {
		return nil, fmt.Errorf("%w: pgdriver.%s under a client whose driver is %T, not *pgdriver.Driver: use that driver's function or Client.CompleteTx",
			leasehold.ErrUnsupportedTx, fn, c.Driver())
	}
	return c, nil
}
