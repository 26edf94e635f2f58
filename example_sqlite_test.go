package leasehold_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/sqlitedriver" // SQLite (modernc.org/sqlite): embedded, no cgo
)

// Example_sqlite is the payment flow of Example_postgres on an SQLite
// file, with no server: the handler charges through the provider with the
// job's idempotency key, then marks the payment paid and completes the job
// in one transaction on the driver's DB(), with sqlitedriver.CompleteTx.
func Example_sqlite() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "leasehold-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	driver, err := sqlitedriver.Open(filepath.Join(dir, "jobs.db"))
	if err != nil {
		log.Fatal(err)
	}
	defer driver.Close()
	db := driver.DB() // the driver's single connection, for the application's own transactions
	psp := &examplePSP{}

	workers := leasehold.NewWorkers()
	err = leasehold.AddWorker(workers, leasehold.WorkFunc[ChargeArgs](
		func(ctx context.Context, job *leasehold.Job[ChargeArgs]) error {
			if err := leasehold.CheckLease(ctx); err != nil {
				return err
			}
			if err := psp.Charge(ctx, job.IdempotencyKey(), job.Args.Cents); err != nil {
				return err
			}
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				return err
			}
			defer tx.Rollback()
			if _, err := tx.ExecContext(ctx, `UPDATE payments SET state = 'paid' WHERE id = ?`, job.Args.PaymentID); err != nil {
				return err
			}
			if err := sqlitedriver.CompleteTx(ctx, tx, job.JobRow); err != nil {
				return err
			}
			return tx.Commit()
		}))
	if err != nil {
		log.Fatal(err)
	}
	client, err := leasehold.NewClient(leasehold.Config{Driver: driver, Workers: workers})
	if err != nil {
		log.Fatal(err)
	}
	if err := client.Migrate(ctx); err != nil {
		log.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `CREATE TABLE payments
		(id TEXT PRIMARY KEY, cents INTEGER NOT NULL, state TEXT NOT NULL)`); err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(context.Background())

	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, `INSERT INTO payments (id, cents, state) VALUES (?, ?, 'due')`, "p-42", 1999); err != nil {
		log.Fatal(err)
	}
	res, err := client.InsertTx(ctx, tx, ChargeArgs{PaymentID: "p-42", Cents: 1999},
		&leasehold.InsertOpts{UniqueKey: "charge-p-42", MaxAttempts: 10})
	if err != nil {
		log.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		log.Fatal(err)
	}

	job := waitFinished(ctx, client, res.Job.ID)
	var state string
	if err := db.QueryRowContext(ctx, `SELECT state FROM payments WHERE id = ?`, "p-42").Scan(&state); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("job %d: %s after %d attempt(s)\n", job.ID, job.State, job.Attempt)
	fmt.Printf("payment p-42: %s, charged %d time(s)\n", state, psp.count())
	// Output:
	// job 1: completed after 1 attempt(s)
	// payment p-42: paid, charged 1 time(s)
}

// waitFinished polls job id until it reaches a final state.
func waitFinished(ctx context.Context, client *leasehold.Client, id int64) *leasehold.JobInfo {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	for {
		job, err := client.GetJob(ctx, id)
		if err != nil {
			log.Fatal(err)
		}
		if job.State.Finished() {
			return job
		}
		select {
		case <-ctx.Done():
			log.Fatalf("job %d still %s: %v", id, job.State, ctx.Err())
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// count returns how many distinct charges p has made.
func (p *examplePSP) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.charges)
}
