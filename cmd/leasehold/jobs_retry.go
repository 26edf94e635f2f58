package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/view"
)

func (a *app) jobsRetryCommand() *cobra.Command {
	var completed bool
	cmd := &cobra.Command{
		Use:   "retry ID",
		Short: "Make a job pending now with a fresh retry budget (a completed one only with --completed)",
		Long: `Make a pending, stuck, reconciling, failed or cancelled job pending now, with a
fresh retry budget (a reconciling job's reconcile job then finds nothing left to
decide). A processing job is refused (exit code 1): cancel it first, or wait for
its lease to end; when its lease has expired and no watcher has passed yet, the
refusal names the watcher pass (watch --once) that ends the attempt.

A completed job is refused too (exit code 1), unless --completed is given: its
handler ran to success, and running it again repeats what it did (a payment
charged twice) unless the handler is idempotent. The state is checked by the
same statement that makes the job pending, so a job that completes while you
type is refused as well.

A finished job whose unique key (enqueue --unique-while-unfinished) another
job holds now is refused too (exit code 1): two unfinished jobs would hold one
key. Let that job finish, or cancel it, first.`,
		Args: argNames("ID"),
		RunE: a.runE(func(cmd *cobra.Command, args []string) error {
			id, err := cli.ParseJobID(args[0])
			if err != nil {
				return err
			}
			return a.withOperator(cmd, func(ctx context.Context, c *leasehold.Client) (func(now time.Time) error, error) {
				retry := c.RetryJob
				if completed {
					retry = c.RetryCompletedJob
				}
				row, err := retry(ctx, id)
				if errors.Is(err, leasehold.ErrJobRunning) {
					if row, ago, expired := leaseExpired(ctx, c, id, nil); expired {
						return nil, expiredLeaseErr(row, ago, watchOnce(row.Queue)+", then retry it")
					}
				}
				if err != nil {
					return nil, jobErr(id, err)
				}
				return func(now time.Time) error {
					return a.print(view.NewJobView(row, now), func(w io.Writer) error {
						_, err := fmt.Fprintf(w, "job %d is pending again (%d more attempts allowed)\n", row.ID, row.MaxAttempts)
						return err
					})
				}, nil
			})
		}),
	}
	cmd.Flags().BoolVar(&completed, "completed", false, "retry the job even if it completed (its handler runs again)")
	return cmd
}

// leaseExpired reports whether job id, read when row is nil, is
// processing under a lease that expired by the database clock, and how
// long ago: its worker died or is frozen, and nothing ends the attempt
// until a watcher passes (none runs in a queue that flags or reconciles
// expired leases unless the operator runs one). A failed read is no.
func leaseExpired(ctx context.Context, c *leasehold.Client, id int64, row *leasehold.JobRow) (*leasehold.JobRow, time.Duration, bool) {
	d := c.Driver()
	if row == nil {
		var err error
		if row, err = d.GetJob(ctx, id); err != nil {
			return nil, 0, false
		}
	}
	now, err := d.Now(ctx)
	if err != nil || row.State != leasehold.StateProcessing || !row.LeaseUntil.Before(now) {
		return nil, 0, false
	}
	return row, now.Sub(row.LeaseUntil), true
}

// expiredLeaseErr refuses an action on job row, processing under a lease
// that expired ago, and says what to do instead: steps.
func expiredLeaseErr(row *leasehold.JobRow, ago time.Duration, steps string) error {
	return cli.Failf("job %d is processing, but its lease expired %s ago and no watcher has ended the attempt "+
		"(its worker died or is frozen): %s", row.ID, cli.FormatDuration(ago), steps)
}

// watchOnce names the watcher pass that ends the attempt of a job of
// queue whose lease expired, with the workers' policy of the queue.
func watchOnce(queue string) string {
	return "run `leasehold watch --once` with the workers' policy for queue " + queue +
		" (their --flag-stuck, --reconcile and --reconcile-* flags: without them the pass treats the queue as one that requeues)"
}

// jobErr turns the library's errors about job id into one-line messages
// with the right exit code.
func jobErr(id int64, err error) error {
	switch {
	case errors.Is(err, leasehold.ErrJobNotFound):
		return &cli.Error{Code: cli.ExitNotFound, Err: fmt.Errorf("job %d not found", id)}
	case errors.Is(err, leasehold.ErrJobRunning):
		return cli.Failf("job %d is processing under a lease; cancel it first or wait for it to end", id)
	case errors.Is(err, leasehold.ErrJobCompleted):
		return cli.Failf("job %d completed: retrying it runs its handler again, which repeats its effects "+
			"unless the handler is idempotent; pass --completed to retry it anyway", id)
	case errors.Is(err, leasehold.ErrJobFinished):
		return cli.Failf("job %d has already finished; nothing to cancel", id)
	case errors.Is(err, leasehold.ErrUniqueKeyHeld):
		// The driver's error carries the database's constraint text too,
		// which says nothing the operator can act on.
		return cli.Failf("job %d: another job holds its unique key now; let that job finish, or cancel it, first", id)
	}
	return err
}
