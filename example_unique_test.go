package leasehold_test

import (
	"context"
	"fmt"
	"log"
	"time"

	"github.com/leasehold/leasehold"
)

// ReconcileArgs are the arguments of the examples' reconcile job.
type ReconcileArgs struct {
	Payment string `json:"payment"`
}

// Kind implements leasehold.Args.
func (ReconcileArgs) Kind() string { return "reconcile" }

// A unique key of the UniqueWhileUnfinished scope is held only while its
// job is unfinished: a scan that runs every minute inserts at most one
// reconcile job per payment at a time, and a new one once the last has
// completed, failed or been cancelled. The default scope, UniqueForever,
// would refuse a second job for the payment as long as the first is kept.
func ExampleUniqueScope() {
	ctx := context.Background()
	client, cleanup := newExampleClient(nil)
	defer cleanup()

	opts := &leasehold.InsertOpts{UniqueKey: "payment-42", UniqueScope: leasehold.UniqueWhileUnfinished}
	scan := func(n int) *leasehold.InsertResult {
		res, err := client.Insert(ctx, ReconcileArgs{Payment: "42"}, opts)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("scan %d: %s job, duplicate %v\n", n, res.Job.State, res.Duplicate)
		return res
	}
	first := scan(1)
	scan(2)

	// The job ends (here an operator cancels it): the key is free again.
	if _, err := client.CancelJob(ctx, first.Job.ID); err != nil {
		log.Fatal(err)
	}
	third := scan(3)
	fmt.Println("a new job:", third.Job.ID != first.Job.ID)
	// Output:
	// scan 1: pending job, duplicate false
	// scan 2: pending job, duplicate true
	// scan 3: pending job, duplicate false
	// a new job: true
}

// A UniqueWindow holds a key within one window of the database clock,
// aligned on the Unix epoch: at most one digest per user and day, however
// many events ask for one. The next day's window frees the key.
func ExampleInsertOpts_uniqueWindow() {
	ctx := context.Background()
	client, cleanup := newExampleClient(nil)
	defer cleanup()

	opts := &leasehold.InsertOpts{UniqueKey: "digest-user-7", UniqueWindow: 24 * time.Hour}
	batch := []leasehold.InsertManyParams{
		{Args: EmailArgs{To: "ada@example.com"}, Opts: opts},
		{Args: EmailArgs{To: "ada@example.com"}, Opts: opts},
	}
	results, err := client.InsertMany(ctx, nil, batch)
	if err != nil {
		log.Fatal(err)
	}
	for i, res := range results {
		fmt.Printf("event %d: job %d, duplicate %v\n", i+1, res.Job.ID, res.Duplicate)
	}
	// Output:
	// event 1: job 1, duplicate false
	// event 2: job 1, duplicate true
}

// AddWorkerWithOptions gives one kind its own settings: a timeout on each
// attempt's handler (its context is cancelled with cause ErrJobTimeout,
// and the attempt records "timed out after …"), a retry policy, and a
// retry budget that jobs of the kind get when inserted without one.
func ExampleAddWorkerWithOptions() {
	ctx := context.Background()
	workers := leasehold.NewWorkers()
	err := leasehold.AddWorkerWithOptions(workers, leasehold.WorkFunc[ReconcileArgs](
		func(ctx context.Context, job *leasehold.Job[ReconcileArgs]) error {
			if job.Attempt == 1 {
				<-ctx.Done() // a provider that does not answer
				return ctx.Err()
			}
			return nil
		}), leasehold.WorkerOptions{
		Timeout:     50 * time.Millisecond,
		RetryPolicy: &leasehold.ExponentialBackoff{Base: 10 * time.Millisecond, Max: time.Second},
		MaxAttempts: 3,
	})
	if err != nil {
		log.Fatal(err)
	}
	client, cleanup := newExampleClient(workers)
	defer cleanup()
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	res, err := client.Insert(ctx, ReconcileArgs{Payment: "42"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	for {
		job, err := client.GetJob(ctx, res.Job.ID)
		if err != nil {
			log.Fatal(err)
		}
		if job.State == leasehold.StateCompleted {
			printHistory(job)
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	// Output:
	// job 1: completed, attempt 2 (2 charged of 3)
	//   attempt 1: retried: timed out after 50ms
	//   attempt 2: completed
}
