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

func (a *app) jobsDeleteCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "delete ID",
		Short: "Delete a finished job and its attempt history",
		Long: `Delete one completed, failed or cancelled job, with its attempt history, and
print it as it was. A pending, processing, stuck or reconciling job is left
alone (exit code 1): cancel it first (a reconciling job is cancelled at once).
A deleted job no longer holds its unique key (enqueue --unique-key): an enqueue
with that key adds a new job.`,
		Args: argNames("ID"),
		RunE: a.runE(func(cmd *cobra.Command, args []string) error {
			id, err := cli.ParseJobID(args[0])
			if err != nil {
				return err
			}
			return a.withOperator(cmd, func(ctx context.Context, c *leasehold.Client) (func(now time.Time) error, error) {
				row, err := c.DeleteJob(ctx, id)
				if errors.Is(err, leasehold.ErrJobRunning) && row != nil {
					if row, ago, expired := leaseExpired(ctx, c, id, row); expired {
						return nil, expiredLeaseErr(row, ago, "cancel it, "+watchOnce(row.Queue)+
							", which ends it cancelled (in a queue that reconciles, its reconciler decides first), then delete it")
					}
				}
				if errors.Is(err, leasehold.ErrJobNotFinished) || errors.Is(err, leasehold.ErrJobRunning) {
					return nil, cli.Failf("job %d has not finished; cancel it first, then delete it", id)
				}
				if err != nil {
					return nil, jobErr(id, err)
				}
				return func(now time.Time) error {
					return a.print(view.NewJobView(row, now), func(w io.Writer) error {
						_, err := fmt.Fprintf(w, "job %d (%s) and its history deleted\n", row.ID, row.State)
						return err
					})
				}, nil
			})
		}),
	}
}
