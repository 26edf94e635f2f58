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
	return &cobra.Command{
		Use:   "retry ID",
		Short: "Make a job that is not processing pending now, with a fresh retry budget",
		Long: `Make a pending, stuck, reconciling, failed, cancelled or completed job
pending now, with a fresh retry budget (a reconciling job's reconcile job then
finds nothing left to decide). A processing job is refused (exit code 1):
cancel it first, or wait for its lease to end.`,
		Args: argNames("ID"),
		RunE: a.runE(func(cmd *cobra.Command, args []string) error {
			id, err := cli.ParseJobID(args[0])
			if err != nil {
				return err
			}
			return a.withOperator(cmd, func(ctx context.Context, c *leasehold.Client) (func(now time.Time) error, error) {
				row, err := c.RetryJob(ctx, id)
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
}

// jobErr turns the library's errors about job id into one-line messages
// with the right exit code.
func jobErr(id int64, err error) error {
	switch {
	case errors.Is(err, leasehold.ErrJobNotFound):
		return &cli.Error{Code: cli.ExitNotFound, Err: fmt.Errorf("job %d not found", id)}
	case errors.Is(err, leasehold.ErrJobRunning):
		return cli.Failf("job %d is processing under a lease; cancel it first or wait for it to end", id)
	case errors.Is(err, leasehold.ErrJobFinished):
		return cli.Failf("job %d has already finished; nothing to cancel", id)
	}
	return err
}
