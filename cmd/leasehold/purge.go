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
)

// maxPurgeAge bounds --older-than.
const maxPurgeAge = 3650 * cli.Day

func (a *app) purgeCommand() *cobra.Command {
	var olderThan time.Duration
	cmd := &cobra.Command{
		Use:   "purge --older-than DURATION",
		Short: "Delete completed, failed and cancelled jobs (and their history) finished before a cutoff",
		Long: `Delete the completed, failed and cancelled jobs that finished more than
--older-than ago (0s: every finished job), with their attempt history, in
batches, and print how many. A deleted job no longer holds its unique key
(enqueue --unique-key): an enqueue with that key adds a new job.`,
		Example: `  leasehold purge --older-than 7d
  leasehold purge --older-than 0s   # every finished job`,
		Args: argNames(),
		RunE: a.runE(func(cmd *cobra.Command, _ []string) error {
			return a.withClient(cmd, func(ctx context.Context, c *leasehold.Client) error {
				n, err := c.PurgeFinished(ctx, olderThan)
				if err != nil {
					return purgeError(n, err)
				}
				out := struct {
					Purged           int64   `json:"purged"`
					OlderThanSeconds float64 `json:"older_than_seconds"`
				}{n, olderThan.Seconds()}
				return a.print(out, func(w io.Writer) error {
					_, err := fmt.Fprintf(w, "purged %d finished jobs (finished more than %s ago)\n", n, cli.FormatDuration(olderThan))
					return err
				})
			})
		}),
	}
	cmd.Flags().Var(cli.NewDurationValue(&olderThan, 0, 0, maxPurgeAge), "older-than",
		"delete jobs finished longer ago than this: 90s, 12h, 7d… (required)")
	_ = cmd.MarkFlagRequired("older-than")
	return cmd
}

// purgeError returns err, the failure of a purge, saying how many
// finished jobs the batches committed before it had deleted: those stay
// deleted. A purge cut off (Ctrl-C, a timeout) may also have deleted the
// batch it was waiting on: the database may have committed it before the
// cancel reached it, and the reply was not read.
func purgeError(n int64, err error) error {
	cut := errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
	switch {
	case cut:
		return fmt.Errorf("purged at least %d finished jobs (the batch being deleted when the purge was cut off may be deleted too), then: %w", n, err)
	case n == 0:
		return err
	}
	return fmt.Errorf("purged %d finished jobs, then: %w", n, err)
}
