package leasehold_test

import (
	"context"
	"fmt"
	"log"
	"slices"

	"github.com/leasehold/leasehold"
)

// AddWorker registers a handler for one kind of job; a client started with
// the Workers claims jobs of that kind, runs the handler under a lease it
// renews, and records the outcome. Returning nil completes the job. Stop
// lets running handlers finish and writes their outcomes before it
// returns.
func ExampleAddWorker() {
	ctx := context.Background()
	sent := make(received, 10)
	workers := leasehold.NewWorkers()
	err := leasehold.AddWorker(workers, leasehold.WorkFunc[EmailArgs](
		func(ctx context.Context, job *leasehold.Job[EmailArgs]) error {
			// job.Args is decoded; job.JobRow holds the stored row.
			sent <- fmt.Sprintf("sent to %s (job %d, attempt %d)", job.Args.To, job.ID, job.Attempt)
			return nil
		}))
	if err != nil {
		log.Fatal(err)
	}
	client, cleanup := newExampleClient(workers)
	defer cleanup()
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}

	for _, to := range []string{"ada@example.com", "grace@example.com"} {
		if _, err := client.Insert(ctx, EmailArgs{To: to}, nil); err != nil {
			log.Fatal(err)
		}
	}
	got := sent.wait(2) // handlers run concurrently: sort for a stable output
	slices.Sort(got)
	for _, s := range got {
		fmt.Println(s)
	}

	if err := client.Stop(ctx); err != nil {
		log.Fatal(err)
	}
	jobs, err := client.ListJobs(ctx, &leasehold.ListParams{States: []leasehold.JobState{leasehold.StateCompleted}})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("completed jobs:", len(jobs))
	// Output:
	// sent to ada@example.com (job 1, attempt 1)
	// sent to grace@example.com (job 2, attempt 1)
	// completed jobs: 2
}
