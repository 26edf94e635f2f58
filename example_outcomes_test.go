package leasehold_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"time"

	"github.com/leasehold/leasehold"
)

// runJob starts a client whose handler for EmailArgs returns what handle
// returns, inserts one job with opts, waits for the handler to run calls
// times, stops the client (which writes the outcomes) and returns the job
// with its attempt history, the stopped client (its operator API still
// works) and the func that removes the database.
func runJob(calls int, opts *leasehold.InsertOpts, cfg func(*leasehold.Config),
	handle func(job *leasehold.Job[EmailArgs]) error) (*leasehold.JobInfo, *leasehold.Client, func()) {
	ctx := context.Background()
	ran := make(received, calls)
	workers := leasehold.NewWorkers()
	err := leasehold.AddWorker(workers, leasehold.WorkFunc[EmailArgs](
		func(ctx context.Context, job *leasehold.Job[EmailArgs]) error {
			defer func() { ran <- job.Args.To }()
			return handle(job)
		}))
	if err != nil {
		log.Fatal(err)
	}
	client, cleanup := newExampleClient(workers, cfg)
	if err := client.Start(ctx); err != nil {
		log.Fatal(err)
	}
	res, err := client.Insert(ctx, EmailArgs{To: "ada@example.com"}, opts)
	if err != nil {
		log.Fatal(err)
	}
	ran.wait(calls)
	if err := client.Stop(ctx); err != nil {
		log.Fatal(err)
	}
	job, err := client.GetJob(ctx, res.Job.ID)
	if err != nil {
		log.Fatal(err)
	}
	return job, client, cleanup
}

// Snooze puts the job back to run later without spending its retry
// budget: the attempt is recorded as snoozed and not charged.
func ExampleSnooze() {
	// runJob runs this handler on one job, as ExampleAddWorker's client
	// does, then stops the client and reads the job back.
	job, _, cleanup := runJob(1, nil, nil, func(job *leasehold.Job[EmailArgs]) error {
		return leasehold.Snooze(time.Hour) // the mail server asked us to come back later
	})
	defer cleanup()
	printHistory(job)
	fmt.Println("runs again", job.RunAt.Sub(job.Attempts[0].EndedAt).Round(time.Minute), "after the snooze")
	// Output:
	// job 1: pending, attempt 1 (0 charged of 20)
	//   attempt 1: snoozed
	// runs again 1h0m0s after the snooze
}

// Permanent fails the job at once, whatever budget it has left: retrying
// cannot help a mail to an address that does not exist.
func ExamplePermanent() {
	job, _, cleanup := runJob(1, &leasehold.InsertOpts{MaxAttempts: 5}, nil, func(job *leasehold.Job[EmailArgs]) error {
		return leasehold.Permanent(errors.New("550 no such user"))
	})
	defer cleanup()
	printHistory(job)
	// Output:
	// job 1: failed, attempt 1 (1 charged of 5)
	//   attempt 1: failed: permanent: 550 no such user
}

// Cancel ends the job in the cancelled state: it never runs again.
func ExampleCancel() {
	job, _, cleanup := runJob(1, nil, nil, func(job *leasehold.Job[EmailArgs]) error {
		return leasehold.Cancel(errors.New("user unsubscribed"))
	})
	defer cleanup()
	printHistory(job)
	// Output:
	// job 1: cancelled, attempt 1 (1 charged of 20)
	//   attempt 1: cancelled: cancelled: user unsubscribed
}

// Any error other than Snooze, Permanent and Cancel is retried after the
// client's RetryPolicy's delay while the job's budget lasts, and every
// attempt stays in the job's history. ExponentialBackoff is the default
// policy (DefaultRetryPolicy); this one starts at 10 ms, without jitter, so
// the example finishes at once.
func ExampleExponentialBackoff() {
	fast := func(cfg *leasehold.Config) {
		cfg.RetryPolicy = &leasehold.ExponentialBackoff{Base: 10 * time.Millisecond, Max: time.Second}
	}
	job, _, cleanup := runJob(3, &leasehold.InsertOpts{MaxAttempts: 5}, fast, func(job *leasehold.Job[EmailArgs]) error {
		if job.Attempt < 3 {
			return errors.New("421 try again later")
		}
		return nil
	})
	defer cleanup()
	printHistory(job)
	// Output:
	// job 1: completed, attempt 3 (3 charged of 5)
	//   attempt 1: retried: 421 try again later
	//   attempt 2: retried: 421 try again later
	//   attempt 3: completed
}
