package main

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/driver"
)

func (a *app) jobsStuckCommand() *cobra.Command {
	var (
		queue          string
		limit          int
		unclaimedAfter time.Duration
	)
	cmd := &cobra.Command{
		Use:   "stuck",
		Short: "List processing jobs whose lease expired, and jobs flagged stuck",
		Long: `List the jobs that need attention: processing jobs whose lease has expired
(their worker died or hung; the watcher takes them back, or a new claim unless
their queue flags or reconciles them or a cancel was requested) and
jobs flagged stuck by the watcher in queues that flag instead of requeueing
(decide with jobs retry or jobs cancel), among them a reconciling job whose
reconcile job an operator cancelled or deleted before it decided (the reason
names that reconcile job). Below them, a line points at each kind
whose due jobs no worker ever claimed for longer than --unclaimed-after while
none of its jobs runs (as ` + "`leasehold queues`" + ` does): probably no running worker
handles it. At most --limit jobs of each sort are listed, the oldest first; when
more match, a line below the table says so (on standard error with --json).
With --json only the jobs are printed, and --unclaimed-after is refused:
` + "`leasehold queues --json`" + ` reports the unclaimed kinds.`,
		Args: argNames(),
		RunE: a.runE(func(cmd *cobra.Command, _ []string) error {
			if err := a.checkStuckFlags(cmd, limit); err != nil {
				return err
			}
			return a.withOperator(cmd, func(ctx context.Context, c *leasehold.Client) (func(now time.Time) error, error) {
				jobs, cut, err := stuckJobs(ctx, c, queue, limit)
				if err != nil {
					return nil, err
				}
				var qs []*leasehold.QueueStats
				if !a.jsonOut {
					// Only NeverClaimed is read: ActiveQueueStats samples
					// it, at a cost the finished jobs do not grow.
					if qs, err = c.ActiveQueueStats(ctx, driver.DefaultUnclaimedSample); err != nil {
						return nil, err
					}
				}
				return func(now time.Time) error {
					if err := a.printJobs(jobs, now, renderStuck); err != nil {
						return err
					}
					if err := a.printCut(cut, limit); err != nil {
						return err
					}
					return cli.RenderUnclaimed(a.stdout, onlyQueue(qs, queue), unclaimedAfter)
				}, nil
			})
		}),
	}
	cmd.Flags().StringVar(&queue, "queue", "", "only jobs of this queue")
	cmd.Flags().IntVar(&limit, "limit", 100, "at most this many jobs of each sort")
	cmd.Flags().Var(cli.NewDurationValue(&unclaimedAfter, defaultUnclaimedAfter, 0, 3650*cli.Day), "unclaimed-after",
		"point at kinds whose due jobs wait unclaimed longer than this")
	return cmd
}

// checkStuckFlags refuses an empty --queue, a --limit out of range, and
// --unclaimed-after with --json, whose array of jobs has no place for the
// unclaimed kinds: `leasehold queues --json` reports them.
func (a *app) checkStuckFlags(cmd *cobra.Command, limit int) error {
	if err := cli.RefuseEmpty(cmd.Flags(), "queue"); err != nil {
		return err
	}
	if err := checkLimit(limit); err != nil {
		return err
	}
	if a.jsonOut && cmd.Flags().Changed("unclaimed-after") {
		return cli.Usagef("--unclaimed-after does not apply with --json, which prints the jobs only: " +
			"leasehold queues --json --unclaimed-after reports the unclaimed kinds (suspect)")
	}
	return nil
}

// stuckJobs lists expired leases and flagged jobs, by id, at most limit
// of each sort, and names each sort that has more jobs than that.
func stuckJobs(ctx context.Context, c *leasehold.Client, queue string, limit int) ([]*leasehold.JobRow, []string, error) {
	expired, moreExpired, err := listPage(ctx, c, leasehold.ListParams{Expired: true, Queue: queue, Limit: limit})
	if err != nil {
		return nil, nil, err
	}
	flagged, moreFlagged, err := listPage(ctx, c, leasehold.ListParams{
		States: []leasehold.JobState{leasehold.StateStuck}, Queue: queue, Limit: limit,
	})
	if err != nil {
		return nil, nil, err
	}
	var cut []string
	if moreExpired {
		cut = append(cut, "processing jobs with an expired lease")
	}
	if moreFlagged {
		cut = append(cut, "jobs flagged stuck")
	}
	jobs := append(expired, flagged...)
	sort.Slice(jobs, func(i, j int) bool { return jobs[i].ID < jobs[j].ID })
	return jobs, cut, nil
}

// renderStuck is cli.RenderStuck, whose reason for a job sent to stuck
// when its reconcile job was cancelled or deleted is the job's
// last_error, which names that reconcile job.
func renderStuck(w io.Writer, jobs []*leasehold.JobRow, now time.Time) error {
	if len(jobs) == 0 {
		return cli.RenderStuck(w, jobs, now)
	}
	t := cli.NewTable(w, "ID", "KIND", "QUEUE", "STATUS", "ATTEMPT", "REASON")
	for _, j := range jobs {
		reason := cli.StuckReason(j, now)
		if j.State == leasehold.StateStuck && strings.HasPrefix(j.LastError, "stuck: reconcile job ") {
			reason = j.LastError
		}
		t.Row(strconv.FormatInt(j.ID, 10), j.Kind, j.Queue, string(j.State), strconv.Itoa(j.Attempt), reason)
	}
	return t.Flush()
}

// printCut says, for each sort of stuck jobs that has more jobs than
// limit, that only the first limit are listed: on stdout after the
// table, or on stderr with --json, as printMore does.
func (a *app) printCut(cut []string, limit int) error {
	for _, what := range cut {
		if _, err := fmt.Fprintf(a.noteWriter(), "… more %s match: only the first %d are listed (raise --limit)\n", what, limit); err != nil {
			return fmt.Errorf("write: %w", err)
		}
	}
	return nil
}

// onlyQueue keeps the statistics of queue ("" keeps all).
func onlyQueue(qs []*leasehold.QueueStats, queue string) []*leasehold.QueueStats {
	if queue == "" {
		return qs
	}
	var out []*leasehold.QueueStats
	for _, q := range qs {
		if q.Queue == queue {
			out = append(out, q)
		}
	}
	return out
}
