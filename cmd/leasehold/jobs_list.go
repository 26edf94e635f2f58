package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/view"
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
		Short: "List jobs, oldest first (or newest first), filtered by status, queue, kind or lease owner",
		Long: `List jobs in id order, oldest first, or newest first with --newest. At most
--limit jobs are printed; when more match, a last line says how to see the next
page (--after ID, or --before ID with --newest; on standard error with --json).
CLAIMS counts the leases a job was given; CHARGED/MAX the attempts charged to
its retry budget (a release at shutdown or a snooze is not charged) and the
budget.`,
		Example: `  leasehold jobs list --status pending,processing --queue default
  leasehold jobs list --newest --limit 20
  leasehold jobs list --owner myhost-4242-1a2b3c4d --json`,
		Args: argNames(),
		RunE: a.runE(func(cmd *cobra.Command, _ []string) error {
			if err := cli.RefuseEmpty(cmd.Flags(), "queue", "kind", "owner", "search", "status"); err != nil {
				return err
			}
			if err := checkLimit(p.Limit); err != nil {
				return err
			}
			for flag, id := range map[string]int64{"--after": p.AfterID, "--before": p.BeforeID} {
				if id < 0 {
					return cli.Usagef("%s %d: want a job id (a positive number)", flag, id)
				}
			}
			p.States = states.States
			return a.withOperator(cmd, func(ctx context.Context, c *leasehold.Client) (func(now time.Time) error, error) {
				jobs, more, err := listPage(ctx, c, p)
				if err != nil {
					return nil, err
				}
				return func(now time.Time) error {
					if err := a.printJobs(jobs, now, cli.RenderJobs); err != nil {
						return err
					}
					return a.printMore(jobs, more, p.Desc)
				}, nil
			})
		}),
	}
	fl := cmd.Flags()
	fl.Var(&states, "status", "only jobs in these statuses (comma-separated or repeated): "+stateList())
	fl.StringVar(&p.Queue, "queue", "", "only jobs of this queue")
	fl.StringVar(&p.Kind, "kind", "", "only jobs of this kind")
	fl.StringVar(&p.Owner, "owner", "", "only jobs leased by this worker instance")
	fl.StringVar(&p.Search, "search", "", "only jobs with this text in a string value of their args or metadata (ASCII letters in any case; no index serves it)")
	fl.Int64Var(&p.AfterID, "after", 0, "only jobs with an id above this one (paging)")
	fl.Int64Var(&p.BeforeID, "before", 0, "only jobs with an id below this one (paging with --newest)")
	fl.BoolVar(&p.Desc, "newest", false, "newest first (descending id)")
	fl.IntVar(&p.Limit, "limit", 100, "at most this many jobs, 1 to 10000")
	return cmd
}

// listFields names the flag of each list filter the library may refuse.
var listFields = cli.FieldFlags{"kind": "--kind", "queue": "--queue", "owner": "--owner", "search": "--search",
	"state": "--status", "limit": "--limit"}

// listPage lists one page of p.Limit jobs and reports whether more match:
// it asks for one job more than it prints.
func listPage(ctx context.Context, c *leasehold.Client, p leasehold.ListParams) ([]*leasehold.JobRow, bool, error) {
	limit := p.Limit
	p.Limit++
	jobs, err := c.ListJobs(ctx, &p)
	if err != nil {
		return nil, false, listFields.Restate(err)
	}
	if len(jobs) > limit {
		return jobs[:limit], true, nil
	}
	return jobs, false, nil
}

// printMore says how to see the next page when more jobs match: on
// stdout after the table, or on stderr with --json (stdout stays a JSON
// array).
func (a *app) printMore(jobs []*leasehold.JobRow, more, desc bool) error {
	if !more || len(jobs) == 0 {
		return nil
	}
	flag := "--after"
	if desc {
		flag = "--before"
	}
	_, err := fmt.Fprintf(a.noteWriter(), "… more jobs match: see the next page with %s %d\n", flag, jobs[len(jobs)-1].ID)
	return err
}

// noteWriter is where a line about a listing goes: stdout after the
// table, or stderr with --json, so that stdout stays a JSON array.
func (a *app) noteWriter() io.Writer {
	if a.jsonOut {
		return a.stderr
	}
	return a.stdout
}

func checkLimit(n int) error {
	if n < 1 || n > maxListLimit {
		return cli.Usagef("--limit %d is out of range 1..%d", n, maxListLimit)
	}
	return nil
}

// printJobs prints jobs as JSON views or with render.
func (a *app) printJobs(jobs []*leasehold.JobRow, now time.Time, render func(io.Writer, []*leasehold.JobRow, time.Time) error) error {
	views := make([]view.JobView, len(jobs))
	for i, j := range jobs {
		views[i] = view.NewJobView(j, now)
	}
	return a.print(views, func(w io.Writer) error { return render(w, jobs, now) })
}

// stateList names every job state, for the help.
func stateList() string {
	names := make([]string, len(leasehold.AllStates))
	for i, st := range leasehold.AllStates {
		names[i] = string(st)
	}
	return strings.Join(names, ", ")
}
