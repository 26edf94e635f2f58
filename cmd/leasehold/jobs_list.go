package main

import (
	"context"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/cli"
)

// maxListLimit bounds --limit of the list commands.
const maxListLimit = 10_000

func (a *app) jobsListCommand() *cobra.Command {
	var (
		states cli.StatesValue
		p      leasehold.ListParams
	)
	cmd := &cobra.Command{
		Use:   "list",
		Short: "List jobs, oldest first, filtered by status, queue, kind or lease owner",
		Example: `  leasehold jobs list --status pending,processing --queue default
  leasehold jobs list --owner myhost-4242-1a2b3c4d --json`,
		Args: argNames(),
		RunE: a.runE(func(cmd *cobra.Command, _ []string) error {
			if err := checkLimit(p.Limit); err != nil {
				return err
			}
			p.States = states.States
			return a.withOperator(cmd, func(ctx context.Context, c *leasehold.Client) (func(now time.Time) error, error) {
				jobs, err := c.ListJobs(ctx, &p)
				if err != nil {
					return nil, err
				}
				return func(now time.Time) error { return a.printJobs(jobs, now, cli.RenderJobs) }, nil
			})
		}),
	}
	fl := cmd.Flags()
	fl.Var(&states, "status", "only jobs in these statuses (comma-separated or repeated): pending, processing, completed, failed, cancelled, stuck")
	fl.StringVar(&p.Queue, "queue", "", "only jobs of this queue")
	fl.StringVar(&p.Kind, "kind", "", "only jobs of this kind")
	fl.StringVar(&p.Owner, "owner", "", "only jobs leased by this worker instance")
	fl.Int64Var(&p.AfterID, "after", 0, "only jobs with an id above this one (paging)")
	fl.IntVar(&p.Limit, "limit", 100, "at most this many jobs")
	return cmd
}

func checkLimit(n int) error {
	if n < 1 || n > maxListLimit {
		return cli.Usagef("--limit %d is out of range 1..%d", n, maxListLimit)
	}
	return nil
}

// printJobs prints jobs as JSON views or with render.
func (a *app) printJobs(jobs []*leasehold.JobRow, now time.Time, render func(io.Writer, []*leasehold.JobRow, time.Time) error) error {
	views := make([]cli.JobView, len(jobs))
	for i, j := range jobs {
		views[i] = cli.NewJobView(j, now)
	}
	return a.print(views, func(w io.Writer) error { return render(w, jobs, now) })
}
