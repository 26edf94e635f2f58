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

func (a *app) jobsCancelCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "cancel ID",
		Short: "Cancel a job (a processing one at its next heartbeat)",
		Long: `Cancel a pending, stuck or reconciling job at once (a reconciling job's
reconcile job then finds nothing left to decide). A processing job is marked:
its handler is cancelled at the next heartbeat and the job ends cancelled,
unless the attempt completes or fails first (a handler that returns nil
completes it) (if
its worker died, the watcher cancels it when the lease expires; in a queue
that reconciles, its reconciler decides first: completed if the work was done,
cancelled where a retry would run it again). A finished job is left alone
(exit code 1).`,
		Args: argNames("ID"),
		RunE: a.runE(func(cmd *cobra.Command, args []string) error {
			id, err := cli.ParseJobID(args[0])
			if err != nil {
				return err
			}
			return a.withOperator(cmd, func(ctx context.Context, c *leasehold.Client) (func(now time.Time) error, error) {
				row, err := c.CancelJob(ctx, id)
				if errors.Is(err, leasehold.ErrJobFinished) && row != nil {
					return nil, cli.Failf("job %d is already %s; nothing to cancel", id, row.State)
				}
				if err != nil {
					return nil, jobErr(id, err)
				}
				return func(now time.Time) error {
					return a.print(view.NewJobView(row, now), func(w io.Writer) error {
						_, err := fmt.Fprintln(w, cancelMessage(row, now))
						return err
					})
				}, nil
			})
		}),
	}
}

// cancelMessage says what cancelling job row did, by the database clock
// now. A processing job whose lease has expired has no worker left to see
// the request at a heartbeat: the watcher ends it when it next moves
// expired leases (a reconciling queue's reconciler first decides whether
// the work was done).
func cancelMessage(row *leasehold.JobRow, now time.Time) string {
	switch {
	case row.State != leasehold.StateProcessing:
		return fmt.Sprintf("job %d cancelled", row.ID)
	case row.LeaseUntil.Before(now):
		return fmt.Sprintf("job %d is processing but its lease expired: cancellation requested, the stuck watcher "+
			"ends the job at its next pass (in a queue that reconciles, its reconciler decides first)", row.ID)
	default:
		return fmt.Sprintf("job %d is processing: cancellation requested, its handler stops at the next heartbeat", row.ID)
	}
}
