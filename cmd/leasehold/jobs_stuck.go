package main

import (
	"context"
	"sort"
	"time"

	"github.com/spf13/cobra"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/cli"
)

func (a *app) jobsStuckCommand() *cobra.Command {
	var (
		queue string
		limit int
	)
	cmd := &cobra.Command{
		Use:   "stuck",
		Short: "List processing jobs whose lease expired, and jobs flagged stuck",
		Long: `List the jobs that need attention: processing jobs whose lease has expired
(their worker died or hung; the watcher or a new claim takes them back) and
jobs flagged stuck by the watcher in queues that flag instead of requeueing
(decide with jobs retry or jobs cancel).`,
		Args: argNames(),
		RunE: a.runE(func(cmd *cobra.Command, _ []string) error {
			if err := checkLimit(limit); err != nil {
				return err
			}
			return a.withOperator(cmd, func(ctx context.Context, c *leasehold.Client) (func(now time.Time) error, error) {
				jobs, err := stuckJobs(ctx, c, queue, limit)
				if err != nil {
					return nil, err
				}
				return func(now time.Time) error { return a.printJobs(jobs, now, cli.RenderStuck) }, nil
			})
		}),
	}
	cmd.Flags().StringVar(&queue, "queue", "", "only jobs of this queue")
	cmd.Flags().IntVar(&limit, "limit", 100, "at most this many jobs of each sort")
	return cmd
}

// stuckJobs lists expired leases and flagged jobs, by id.
func stuckJobs(ctx context.Context, c *leasehold.Client, queue string, limit int) ([]*leasehold.JobRow, error) {
	expired, err := c.ListJobs(ctx, &leasehold.ListParams{Expired: true, Queue: queue, Limit: limit})
	if err != nil {
		return nil, err
	}
	flagged, err := c.ListJobs(ctx, &leasehold.ListParams{
		States: []leasehold.JobState{leasehold.StateStuck}, Queue: queue, Limit: limit,
	})
	if err != nil {
		return nil, err
	}
	jobs := append(expired, flagged...)
	sort.Slice(jobs, func(i, j int) bool { return jobs[i].ID < jobs[j].ID })
	return jobs, nil
}
