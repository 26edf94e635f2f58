package leasehold_test

// README:begin library
import (
	"context"
	"fmt"
	"log"
	"os"
	"os/signal"
	"sync"
	"syscall"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/pgdriver" // PostgreSQL (pgx v5): production
)

// ChargeArgs are the arguments of a payment job; Kind names its handler.
type ChargeArgs struct {
	PaymentID string `json:"payment_id"`
	Cents     int64  `json:"cents"`
}

// Kind implements leasehold.Args.
func (ChargeArgs) Kind() string { return "charge" }

// Example_postgres charges payments with a PostgreSQL job queue. The
// handler calls the payment provider with the job's idempotency key, then
// marks the payment paid and completes the job in one pgx transaction
// with pgdriver.CompleteTx: both commit, or neither does.
func Example_postgres() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	driver, err := pgdriver.Open(ctx, os.Getenv("DATABASE_URL"))
	if err != nil {
		log.Fatal(err)
	}
	defer driver.Close()
	pool := driver.Pool() // the driver's pgx pool, for the application's own transactions: size it (README, Drivers)
	psp := &examplePSP{}

	workers := leasehold.NewWorkers()
	err = leasehold.AddWorker(workers, leasehold.WorkFunc[ChargeArgs](
		func(ctx context.Context, job *leasehold.Job[ChargeArgs]) error {
			// An outside system cannot be fenced: call it only while the lease is
			// safe to act on, and give it the job's idempotency key, the same on
			// every attempt of this job and never another job's.
			if err := leasehold.CheckLease(ctx); err != nil {
				return err // the lease may be another worker's by now: do not charge
			}
			if err := psp.Charge(ctx, job.IdempotencyKey(), job.Args.Cents); err != nil {
				return err // retried with backoff while budget remains
			}
			// The business write and the fenced completion commit together, or not at all.
			tx, err := pool.Begin(ctx)
			if err != nil {
				return err
			}
			defer tx.Rollback(ctx) // does nothing once committed
			if _, err := tx.Exec(ctx, `UPDATE payments SET state = 'paid' WHERE id = $1`, job.Args.PaymentID); err != nil {
				return err
			}
			// No client variable needed: CompleteTx finds the running client in ctx,
			// and the compiler checks that tx is a pgx.Tx.
			if err := pgdriver.CompleteTx(ctx, tx, job.JobRow); err != nil {
				return err // leasehold.ErrLeaseLost: another worker owns the job now; roll back
			}
			return tx.Commit(ctx)
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
	if _, err := pool.Exec(ctx, `CREATE TABLE IF NOT EXISTS payments
		(id text PRIMARY KEY, cents bigint NOT NULL, state text NOT NULL)`); err != nil {
		log.Fatal(err)
	}
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	defer client.Stop(context.Background()) // graceful: finish, then release leases at once

	// Enqueue inside the application's own transaction: the job exists only if it commits.
	tx, err := pool.Begin(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, `INSERT INTO payments (id, cents, state) VALUES ($1, $2, 'due')`, "p-42", 1999); err != nil {
		log.Fatal(err)
	}
	if _, err := client.InsertTx(ctx, tx, ChargeArgs{PaymentID: "p-42", Cents: 1999},
		&leasehold.InsertOpts{UniqueKey: "charge-p-42", MaxAttempts: 10}); err != nil {
		log.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		log.Fatal(err)
	}
	<-ctx.Done() // work until SIGINT or SIGTERM
}

// examplePSP is this example's stand-in for a payment provider's client.
// Like a real provider it charges once per idempotency key: a key it has
// seen (the same job run again after a crash) gets the first charge back
// instead of a second one. It keeps its charges in memory.
type examplePSP struct {
	mu      sync.Mutex
	charges map[string]int64 // idempotency key -> cents
}

// Charge charges cents once for key.
func (p *examplePSP) Charge(ctx context.Context, key string, cents int64) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if prev, seen := p.charges[key]; seen {
		if prev != cents {
			return fmt.Errorf("examplePSP: key %s was charged %d cents, not %d", key, prev, cents)
		}
		return nil // a replay: already charged
	}
	if p.charges == nil {
		p.charges = make(map[string]int64)
	}
	p.charges[key] = cents
	return nil
}

// README:end library
