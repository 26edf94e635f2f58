package leasehold_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/leasehold/leasehold"
)

// GetJob returns a job with its attempt history: one row per claim, with
// its owner, times, outcome and error.
func ExampleClient_GetJob() {
	// A job that failed once and then succeeded (see ExampleExponentialBackoff).
	fast := func(cfg *leasehold.Config) {
		cfg.RetryPolicy = &leasehold.ExponentialBackoff{Base: 10 * time.Millisecond, Max: time.Second}
	}
	ran, client, cleanup := runJob(2, nil, fast, func(job *leasehold.Job[EmailArgs]) error {
		if job.Attempt == 1 {
			return errors.New("connection reset")
		}
		return nil
	})
	defer cleanup()

	job, err := client.GetJob(context.Background(), ran.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("job %d (%s, args %s): %s\n", job.ID, job.Kind, job.Args, job.State)
	for _, a := range job.Attempts {
		fmt.Printf("attempt %d by %s: %s %q, ended after its claim: %v\n",
			a.Attempt, a.Owner, a.Outcome, a.Error, !a.EndedAt.Before(a.ClaimedAt))
	}
	_, err = client.GetJob(context.Background(), 99)
	fmt.Println("job 99:", errors.Is(err, leasehold.ErrJobNotFound))
	// Output:
	// job 1 (email, args {"to":"ada@example.com"}): completed
	// attempt 1 by example-worker: retried "connection reset", ended after its claim: true
	// attempt 2 by example-worker: completed "", ended after its claim: true
	// job 99: true
}

// insertExampleJobs inserts the operator examples' jobs, ids 1 to 4: three
// in queue "default" (job 4 to run in an hour) and job 3 in "bulk".
func insertExampleJobs(ctx context.Context, client *leasehold.Client) {
	_, err := client.InsertMany(ctx, nil, []leasehold.InsertManyParams{
		{Args: EmailArgs{To: "ada@example.com"}},
		{Args: EmailArgs{To: "grace@example.com"}},
		{Args: EmailArgs{To: "linus@example.com"}, Opts: &leasehold.InsertOpts{Queue: "bulk"}},
		{Args: EmailArgs{To: "ken@example.com"}, Opts: &leasehold.InsertOpts{RunIn: time.Hour}},
	})
	if err != nil {
		log.Fatal(err)
	}
}

// ListJobs filters by state, queue, kind and owner, and pages by id: with
// Desc the newest come first and BeforeID continues after the last id
// seen.
func ExampleClient_ListJobs() {
	ctx := context.Background()
	client, cleanup := newExampleClient(nil)
	defer cleanup()
	insertExampleJobs(ctx, client)
	if _, err := client.CancelJob(ctx, 2); err != nil {
		log.Fatal(err)
	}

	show := func(title string, p *leasehold.ListParams) {
		jobs, err := client.ListJobs(ctx, p)
		if err != nil {
			log.Fatal(err)
		}
		fmt.Print(title, ":")
		for _, j := range jobs {
			fmt.Printf(" %d/%s/%s", j.ID, j.Queue, j.State)
		}
		fmt.Println()
	}
	show("all", nil)
	show("pending in default", &leasehold.ListParams{Queue: "default", States: []leasehold.JobState{leasehold.StatePending}})
	show("finished", &leasehold.ListParams{States: []leasehold.JobState{leasehold.StateCompleted, leasehold.StateFailed, leasehold.StateCancelled}})
	show("newest two", &leasehold.ListParams{Desc: true, Limit: 2})
	show("next page", &leasehold.ListParams{Desc: true, Limit: 2, BeforeID: 3})

	_, err := client.ListJobs(ctx, &leasehold.ListParams{States: []leasehold.JobState{"done"}})
	fmt.Println("unknown state refused:", errors.Is(err, leasehold.ErrInvalidArgs))
	// Output:
	// all: 1/default/pending 2/default/cancelled 3/bulk/pending 4/default/pending
	// pending in default: 1/default/pending 4/default/pending
	// finished: 2/default/cancelled
	// newest two: 4/default/pending 3/bulk/pending
	// next page: 2/default/cancelled 1/default/pending
	// unknown state refused: true
}

// RetryJob gives a job that failed (or was cancelled, or is stuck) a fresh
// retry budget and makes it pending now; the attempts it already made stay
// in its history, free.
func ExampleClient_RetryJob() {
	ctx := context.Background()
	job, client, cleanup := runJob(1, &leasehold.InsertOpts{MaxAttempts: 1}, nil, func(job *leasehold.Job[EmailArgs]) error {
		return errors.New("mailbox full")
	})
	defer cleanup()
	printHistory(job)

	// The mailbox is fixed: run the job again.
	row, err := client.RetryJob(ctx, job.ID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("retried: job %d %s, attempt %d (%d charged of %d)\n",
		row.ID, row.State, row.Attempt, row.ChargedAttempts(), row.MaxAttempts)
	// Output:
	// job 1: failed, attempt 1 (1 charged of 1)
	//   attempt 1: failed: mailbox full
	// retried: job 1 pending, attempt 1 (0 charged of 1)
}

// CancelJob cancels a pending job at once (a processing job is cancelled
// at its next heartbeat); a finished job is left alone and ErrJobFinished
// says so.
func ExampleClient_CancelJob() {
	ctx := context.Background()
	client, cleanup := newExampleClient(nil)
	defer cleanup()
	insertExampleJobs(ctx, client)

	row, err := client.CancelJob(ctx, 4)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("job %d: %s\n", row.ID, row.State)

	_, err = client.CancelJob(ctx, 4)
	fmt.Println("again:", errors.Is(err, leasehold.ErrJobFinished))
	_, err = client.CancelJob(ctx, 99)
	fmt.Println("no such job:", errors.Is(err, leasehold.ErrJobNotFound))
	// Output:
	// job 4: cancelled
	// again: true
	// no such job: true
}

// QueueStats counts each queue's jobs by state, with the live and expired
// leases and the age of the oldest job waiting to run.
func ExampleClient_QueueStats() {
	ctx := context.Background()
	client, cleanup := newExampleClient(nil)
	defer cleanup()
	insertExampleJobs(ctx, client)
	if _, err := client.CancelJob(ctx, 1); err != nil {
		log.Fatal(err)
	}

	stats, err := client.QueueStats(ctx)
	if err != nil {
		log.Fatal(err)
	}
	for _, q := range stats {
		fmt.Printf("%s: %d pending, %d cancelled, %d live leases\n",
			q.Queue, q.Counts[leasehold.StatePending], q.Counts[leasehold.StateCancelled], q.LiveLeases)
	}
	// Output:
	// bulk: 1 pending, 0 cancelled, 0 live leases
	// default: 2 pending, 1 cancelled, 0 live leases
}

// PurgeFinished deletes finished jobs and their history once they are
// older than the age given; Config.Retention does the same in the
// background.
func ExampleClient_PurgeFinished() {
	ctx := context.Background()
	client, cleanup := newExampleClient(nil)
	defer cleanup()
	insertExampleJobs(ctx, client)
	for _, id := range []int64{1, 2} {
		if _, err := client.CancelJob(ctx, id); err != nil {
			log.Fatal(err)
		}
	}

	time.Sleep(10 * time.Millisecond) // let the cancellations age a little

	n, err := client.PurgeFinished(ctx, 24*time.Hour)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("finished a day ago, deleted:", n)
	n, err = client.PurgeFinished(ctx, 0)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("finished before now, deleted:", n)
	jobs, err := client.ListJobs(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("left:", len(jobs))
	// Output:
	// finished a day ago, deleted: 0
	// finished before now, deleted: 2
	// left: 2
}
