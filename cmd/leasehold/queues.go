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
yet, is allowed. With --json it prints the queue as ` + "`leasehold queues --json`" + ` does,
counting its unfinished jobs only.`,
		Args: argNames("NAME"),
	}
	if !pause {
		cmd.Use = "resume NAME"
		cmd.Short = "Resume a paused queue: workers claim its jobs again"
		cmd.Long = `Resume a paused queue: workers claim its jobs again, at once on PostgreSQL
(the resume sends the queue's wake-up notification) and within one poll
interval on SQLite or with poll-only workers (Config.PollOnly). Resuming a queue that is not
paused is allowed. With --json it prints the queue as ` + "`leasehold queues --json`" + ` does,
counting its unfinished jobs only.`
	}
	cmd.RunE = a.runE(func(cmd *cobra.Command, args []string) error {
		return a.withClient(cmd, func(ctx context.Context, c *leasehold.Client) error {
			return a.setQueuePaused(ctx, c, args[0], pause, c.ActiveQueueStats)
		})
	})
	return cmd
}

// activeStatsFunc reads the unfinished jobs' statistics of every queue, as
// Client.ActiveQueueStats does.
type activeStatsFunc func(ctx context.Context, countLimit int) ([]*leasehold.QueueStats, error)

// setQueuePaused pauses (or resumes) queue name, then prints the queue as
// stats reports it. Once the change has committed, the statistics are only
// displayed: a failure to read them (a Ctrl-C, a dropped connection) is a
// warning on stderr, and the command still says what it did and succeeds,
// so that a script does not take a committed pause for a failed one.
func (a *app) setQueuePaused(ctx context.Context, c *leasehold.Client, name string, pause bool, stats activeStatsFunc) error {
	set, verb := c.ResumeQueue, "resumed: workers claim its jobs again"
	if pause {
		set, verb = c.PauseQueue, "paused: workers claim none of its jobs; running jobs finish"
	}
	if err := set(ctx, name); err != nil {
		return err // an invalid name exits with the usage code
	}
	v, err := queueView(ctx, stats, name)
	if err != nil {
		// The view then holds only what the command knows: the queue and
		// its pause; no counts.
		v = view.QueueView{Queue: name, Paused: pause, Counts: map[string]int64{}, NeverClaimed: []view.KindBacklogView{}}
		if _, werr := fmt.Fprintf(a.stderr, "leasehold: warning: queue %s %s, but its statistics could not be read: %v\n",
			cli.Truncate(name, 80), pausedWord(pause), err); werr != nil {
			return fmt.Errorf("write: %w", werr)
		}
	}
	return a.print(v, func(w io.Writer) error {
		_, err := fmt.Fprintf(w, "queue %s %s\n", cli.Truncate(name, 80), verb)
		return err
	})
}

// pausedWord is what setQueuePaused did: "paused" or "resumed".
func pausedWord(pause bool) string {
	if pause {
		return "paused"
	}
	return "resumed"
}

// queueView returns the view of queue's unfinished jobs, read with stats
// (ActiveQueueStats: its cost grows with neither the finished jobs nor,
// beyond its count limit, the backlog), empty when it has none and is not
// paused. The finished states are left out of its counts, which
// ActiveQueueStats does not read: a zero there would claim the queue has
// no finished jobs.
func queueView(ctx context.Context, stats activeStatsFunc, queue string) (view.QueueView, error) {
	qs, err := stats(ctx, 0)
	if err != nil {
		return view.QueueView{}, fmt.Errorf("queue statistics: %w", err)
	}
	q := &leasehold.QueueStats{Queue: queue}
	for _, s := range qs {
		if s.Queue == queue {
			q = s
			break
		}
	}
	v := view.NewQueueView(q, defaultUnclaimedAfter)
	for _, s := range leasehold.AllStates {
		if s.Finished() {
			delete(v.Counts, string(s))
		}
	}
	return v, nil
}
