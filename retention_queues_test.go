package leasehold_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// retentionChargeArgs and retentionEmailArgs are the jobs of two services
// that share one database, each working its own queue.
type (
	retentionChargeArgs struct {
		Payment string `json:"payment"`
	}
	retentionEmailArgs struct{}
)

func (retentionChargeArgs) Kind() string { return "retention.charge" }
func (retentionEmailArgs) Kind() string  { return "retention.email" }

// TestRetentionDeletesOwnQueuesOnly: a client with FinishedRetention
// deletes the finished jobs of its own queues only, on every driver. A
// service working queue "emails" with a short retention runs beside a
// payments service that keeps its finished jobs for their unique keys:
// its passes delete its own finished email, and leave the completed
// charge, so that the payments service's next insert of the same charge
// is a duplicate of it, not a second charge.
func TestRetentionDeletesOwnQueuesOnly(t *testing.T) {
	const retention, interval = 100 * time.Millisecond, 50 * time.Millisecond
	eachDriver(t, func(t *testing.T, d driver.Driver) {
		ctx := t.Context()
		payments := leasehold.NewWorkers()
		if err := leasehold.AddWorker(payments, leasehold.WorkFunc[retentionChargeArgs](
			func(context.Context, *leasehold.Job[retentionChargeArgs]) error { return nil })); err != nil {
			t.Fatal(err)
		}
		b := startRetentionClient(t, leasehold.Config{Driver: d, Workers: payments, Queues: map[string]leasehold.QueueConfig{"payments": {}}})
		emails := leasehold.NewWorkers()
		if err := leasehold.AddWorker(emails, leasehold.WorkFunc[retentionEmailArgs](
			func(context.Context, *leasehold.Job[retentionEmailArgs]) error { return nil })); err != nil {
			t.Fatal(err)
		}
		a := startRetentionClient(t, leasehold.Config{Driver: d, Workers: emails, Queues: map[string]leasehold.QueueConfig{"emails": {}},
			FinishedRetention: retention, WatcherInterval: interval})

		opts := &leasehold.InsertOpts{Queue: "payments", UniqueKey: "charge-p-42"}
		charge, err := b.Insert(ctx, retentionChargeArgs{Payment: "p-42"}, opts)
		if err != nil {
			t.Fatal(err)
		}
		email, err := a.Insert(ctx, retentionEmailArgs{}, &leasehold.InsertOpts{Queue: "emails"})
		if err != nil {
			t.Fatal(err)
		}
		var finished time.Time
		waitRetention(t, "the charge to complete", func() bool {
			j, err := b.GetJob(ctx, charge.Job.ID)
			if err != nil || j.State != leasehold.StateCompleted {
				return false
			}
			finished = j.FinishedAt
			return true
		})
		waitRetention(t, "the emails client to purge its finished email", func() bool {
			_, err := a.GetJob(ctx, email.Job.ID)
			return errors.Is(err, leasehold.ErrJobNotFound)
		})
		// Passes of the emails client's retention run with the charge
		// finished longer ago than the retention.
		waitRetention(t, "the charge to age past the retention", func() bool {
			now, err := d.Now(ctx)
			return err == nil && now.After(finished.Add(retention+3*interval))
		})
		if j, err := b.GetJob(ctx, charge.Job.ID); err != nil || j.State != leasehold.StateCompleted {
			t.Fatalf("completed charge of queue payments after the emails client's retention passes: %+v, %v; want it kept", j, err)
		}
		again, err := b.Insert(ctx, retentionChargeArgs{Payment: "p-42"}, opts)
		if err != nil {
			t.Fatal(err)
		}
		if !again.Duplicate || again.Job.ID != charge.Job.ID {
			t.Fatalf("second insert of charge-p-42: job %d, duplicate %v; want a duplicate of job %d (its key still held)",
				again.Job.ID, again.Duplicate, charge.Job.ID)
		}
	})
}

// startRetentionClient starts a client of cfg, quiet, with fast polls,
// and stops it when the test ends.
func startRetentionClient(t *testing.T, cfg leasehold.Config) *leasehold.Client {
	t.Helper()
	cfg.PollInterval, cfg.Logger = 20*time.Millisecond, slog.New(slog.NewTextHandler(io.Discard, nil))
	c, err := leasehold.NewClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Start(t.Context()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = c.Stop(ctx)
	})
	return c
}

// waitRetention waits up to 10 s for done.
func waitRetention(t *testing.T, what string, done func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !done(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
	}
}
