package payments

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// recordTimeout bounds the transaction that records a charge.
const recordTimeout = 30 * time.Second

// errNothingToRecord, returned by a record's fenced writes, rolls the
// record back and makes record return nil: the charge is someone else's
// to record.
var errNothingToRecord = errors.New("payments: nothing to record")

// record inserts e and runs fenced, the fenced writes of the lease that
// made the charge, in one transaction of the ledger's database, so the
// ledger row and the job's outcome commit together or not at all. The
// charge has happened, so it is recorded even if ctx was cancelled
// meanwhile (lease given up, shutdown): the fence, not the context,
// decides whether the lease may still write; recordTimeout bounds it.
func (l *Ledger) record(ctx context.Context, e Entry, fenced func(ctx context.Context, tx *sql.Tx) error) (err error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	tx, err := l.db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("payments: begin: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	if err = l.insert(ctx, tx, e); err != nil {
		return err
	}
	if err = fenced(ctx, tx); err != nil {
		if errors.Is(err, errNothingToRecord) {
			_ = tx.Rollback()
			return nil
		}
		return err
	}
	if err = tx.Commit(); err != nil {
		return fmt.Errorf("payments: commit: %w", err)
	}
	return nil
}
