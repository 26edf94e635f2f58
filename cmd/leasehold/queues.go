package main

import (
	"context"
	"fmt"
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
so the jobs are the evidence). PAUSED says whether the queue is paused.

Subcommands pause and resume stop and restart claiming from a queue, in every
worker process on the database.`,
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
	cmd.AddCommand(a.queuesPauseCommand(true), a.queuesPauseCommand(false))
	return cmd
}

// queuesPauseCommand is `queues pause NAME` (pause) or `queues resume NAME`.
func (a *app) queuesPauseCommand(pause bool) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "pause NAME",
		Short: "Pause a queue: no worker claims its jobs until it is resumed",
		Long: `Pause a queue for every worker process on the database: the claim statement
checks the pause, so from its next claim on no worker claims the queue's jobs.
Jobs already running finish normally. The pause is
recorded in the database, so it holds for workers started later, until
` + "`leasehold queues resume NAME`" + `. Pausing a paused queue, or a queue with no jobs
yet, is allowed.`,
		Args: argNames("NAME"),
	}
	if !pause {
		cmd.Use = "resume NAME"
		cmd.Short = "Resume a paused queue: workers claim its jobs again"
		cmd.Long = `Resume a paused queue: workers claim its jobs again, at once on PostgreSQL
(the resume sends the queue's wake-up notification) and within one poll
interval on SQLite or with poll-only workers (Config.PollOnly). Resuming a queue that is not
paused is allowed.`
	}
	cmd.RunE = a.runE(func(cmd *cobra.Command, args []string) error {
		name := args[0]
		return a.withClient(cmd, func(ctx context.Context, c *leasehold.Client) error {
			set, verb := c.ResumeQueue, "resumed: workers claim its jobs again"
			if pause {
				set, verb = c.PauseQueue, "paused: workers claim none of its jobs; running jobs finish"
			}
			if err := set(ctx, name); err != nil {
				return err // an invalid name exits with the usage code
			}
			v, err := queueView(ctx, c, name)
			if err != nil {
				return err
			}
			return a.print(v, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "queue %s %s\n", cli.Truncate(name, 80), verb)
				return err
			})
		})
	})
	return cmd
}

// queueView returns the view of queue's statistics, empty when it has no
// jobs and is not paused.
func queueView(ctx context.Context, c *leasehold.Client, queue string) (view.QueueView, error) {
	qs, err := c.QueueStats(ctx)
	if err != nil {
		return view.QueueView{}, err
	}
	for _, q := range qs {
		if q.Queue == queue {
			return view.NewQueueView(q, defaultUnclaimedAfter), nil
		}
	}
	return view.NewQueueView(&leasehold.QueueStats{Queue: queue}, defaultUnclaimedAfter), nil
}
