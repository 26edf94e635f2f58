package leasehold_test

import (
	"context"
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// execIn runs query in the caller's transaction tx (a *sql.Tx or a pgx.Tx).
func execIn(ctx context.Context, tx any, query string) error {
	var err error
	switch tx := tx.(type) {
	case *sql.Tx:
		_, err = tx.ExecContext(ctx, query)
	case pgx.Tx:
		_, err = tx.Exec(ctx, query)
	default:
		err = fmt.Errorf("no statements for %T", tx)
	}
	return err
}

// TestCompleteTxAfterSQLSavepointRolledBack: a CompleteTx undone by a
// ROLLBACK TO of a savepoint the caller opened with SQL, in the same
// transaction object, leaves the job to complete: a CompleteTx in that
// transaction then completes it, and the job is completed once the
// transaction commits, in one event.
func TestCompleteTxAfterSQLSavepointRolledBack(t *testing.T) {
	eachDriver(t, func(t *testing.T, d driver.Driver) {
		got := make(chan error, 1)
		c, id, ends := fencedClient(t, d, time.Minute, func(ctx context.Context, c *leasehold.Client, job *leasehold.Job[fencedArgs]) error {
			tx, commit, rollback, err := fencedTx(ctx, d)
			if err != nil {
				return err
			}
			defer rollbackQuietly(rollback)
			err = func() error {
				if err := execIn(ctx, tx, `SAVEPOINT app`); err != nil {
					return err
				}
				if err := c.CompleteTx(ctx, tx, job.JobRow); err != nil {
					return fmt.Errorf("CompleteTx in the savepoint: %w", err)
				}
				if err := execIn(ctx, tx, `ROLLBACK TO SAVEPOINT app`); err != nil {
					return err
				}
				if err := c.CompleteTx(ctx, tx, job.JobRow); err != nil {
					return fmt.Errorf("CompleteTx after the savepoint rolled back: %w", err)
				}
				return commit()
			}()
			got <- err
			return err
		})
		kinds := endingsOf(t, ends, id)
		if err := <-got; err != nil {
			t.Errorf("handler: %v", err)
		}
		if len(kinds) != 1 || kinds[0] != leasehold.EventFinished {
			t.Errorf("ending events %v; want one finished", kinds)
		}
		info, err := c.GetJob(t.Context(), id)
		if err != nil {
			t.Fatal(err)
		}
		if info.State != leasehold.StateCompleted || info.Attempt != 1 {
			t.Errorf("job %s at attempt %d; want completed in its first attempt", info.State, info.Attempt)
		}
	})
}
