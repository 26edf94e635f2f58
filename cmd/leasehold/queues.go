package main

import (
	"context"
	"io"

	"github.com/spf13/cobra"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/cli"
)

func (a *app) queuesCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "queues",
		Short: "Show each queue: jobs per status, age of the oldest pending job, leases",
		Args:  argNames(),
		RunE: a.runE(func(cmd *cobra.Command, _ []string) error {
			return a.withClient(cmd, func(ctx context.Context, c *leasehold.Client) error {
				qs, err := c.QueueStats(ctx)
				if err != nil {
					return err
				}
				views := make([]cli.QueueView, len(qs))
				for i, q := range qs {
					views[i] = cli.NewQueueView(q)
				}
				return a.print(views, func(w io.Writer) error { return cli.RenderQueues(w, qs) })
			})
		}),
	}
}
