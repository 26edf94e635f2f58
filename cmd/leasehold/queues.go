package main

import (
	"context"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/view"
)

// defaultUnclaimedAfter is how long a due job may wait unclaimed, with
// no job of its kind running, before `queues` points at its kind.
const defaultUnclaimedAfter = time.Minute

func (a *app) queuesCommand() *cobra.Command {
	var unclaimedAfter time.Duration
	cmd := &cobra.Command{
		Use:   "queues",
		Short: "Show each queue: jobs per status, age of the oldest pending job, leases",
		Long: `Show each queue: jobs per status, the age of the oldest due pending job, and
live and expired leases. Below the table, a line points at each kind whose due
jobs no worker ever claimed for longer than --unclaimed-after while no job of
that kind is running: usually no running worker handles that kind (workers
claim only the kinds they have handlers for; there is no registry of workers,
so the jobs are the evidence).`,
		Args: argNames(),
		RunE: a.runE(func(cmd *cobra.Command, _ []string) error {
			return a.withClient(cmd, func(ctx context.Context, c *leasehold.Client) error {
				qs, err := c.QueueStats(ctx)
				if err != nil {
					return err
				}
				views := make([]view.QueueView, len(qs))
				for i, q := range qs {
					views[i] = view.NewQueueView(q, unclaimedAfter)
				}
				return a.print(views, func(w io.Writer) error { return cli.RenderQueues(w, qs, unclaimedAfter) })
			})
		}),
	}
	cmd.Flags().Var(cli.NewDurationValue(&unclaimedAfter, defaultUnclaimedAfter, 0, 3650*cli.Day), "unclaimed-after",
		"point at kinds whose due jobs wait unclaimed longer than this")
	return cmd
}
