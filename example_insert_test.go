package leasehold_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/leasehold/leasehold"
)

// Insert adds one job in its own transaction. Options choose the queue,
// the priority (lower runs first) and when the job may run; a UniqueKey
// makes the insert idempotent: inserting the same kind with the same key
// again returns the job that exists, marked Duplicate.
func ExampleClient_Insert() {
	ctx := context.Background()
	client, cleanup := newExampleClient(nil)
	defer cleanup()

	// Default options: queue "default", priority 0, runnable now.
	res, err := client.Insert(ctx, EmailArgs{To: "ada@example.com"}, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("job %d: %s in %q, priority %d\n", res.Job.ID, res.Job.State, res.Job.Queue, res.Job.Priority)

	// A welcome mail sent an hour from now (by the database clock), once
	// per user however many times the signup code runs.
	opts := &leasehold.InsertOpts{Queue: "emails", Priority: 1, RunIn: time.Hour, UniqueKey: "welcome-42"}
	res, err = client.Insert(ctx, EmailArgs{To: "grace@example.com"}, opts)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("job %d: %s in %q, priority %d, runs in %v, duplicate %v\n", res.Job.ID, res.Job.State,
		res.Job.Queue, res.Job.Priority, res.Job.RunAt.Sub(res.Job.CreatedAt).Round(time.Minute), res.Duplicate)

	res, err = client.Insert(ctx, EmailArgs{To: "grace@example.com"}, opts)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("again: job %d, duplicate %v\n", res.Job.ID, res.Duplicate)
	// Output:
	// job 1: pending in "default", priority 0
	// job 2: pending in "emails", priority 1, runs in 1h0m0s, duplicate false
	// again: job 2, duplicate true
}

// InsertMany adds a batch in one transaction: all of it or, when one job
// is refused, none of it. Results are in the batch's
// order.
func ExampleClient_InsertMany() {
	ctx := context.Background()
	client, cleanup := newExampleClient(nil)
	defer cleanup()

	batch := []leasehold.InsertManyParams{
		{Args: EmailArgs{To: "ada@example.com"}},
		{Args: EmailArgs{To: "grace@example.com"}, Opts: &leasehold.InsertOpts{Priority: 5}},
		{Args: EmailArgs{To: "linus@example.com"}, Opts: &leasehold.InsertOpts{Queue: "bulk"}},
	}
	results, err := client.InsertMany(ctx, nil, batch)
	if err != nil {
		log.Fatal(err)
	}
	for _, res := range results {
		fmt.Printf("job %d: %s, queue %q, priority %d\n", res.Job.ID, res.Job.Args, res.Job.Queue, res.Job.Priority)
	}

	// A refused job names its index, and nothing of the batch is inserted.
	batch = append(batch, leasehold.InsertManyParams{Args: EmailArgs{}, Opts: &leasehold.InsertOpts{Queue: "no spaces"}})
	_, err = client.InsertMany(ctx, nil, batch)
	var bad *leasehold.InvalidInputError
	if errors.As(err, &bad) {
		fmt.Printf("refused: job %d, field %s, ErrInvalidQueue %v\n", bad.Index, bad.Field, errors.Is(err, leasehold.ErrInvalidQueue))
	}
	jobs, err := client.ListJobs(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("jobs stored:", len(jobs))
	// Output:
	// job 1: {"to":"ada@example.com"}, queue "default", priority 0
	// job 2: {"to":"grace@example.com"}, queue "default", priority 5
	// job 3: {"to":"linus@example.com"}, queue "bulk", priority 0
	// refused: job 3, field queue, ErrInvalidQueue true
	// jobs stored: 3
}
