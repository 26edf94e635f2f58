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

func (a *app) periodicCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "periodic",
		Short: "Show, or forget, the schedules of periodic jobs",
		Long: `Periodic jobs are configured in the processes that run them (Config.Periodic,
Client.AddPeriodic, or ` + "`leasehold work --periodic`" + `); every process running a
schedule records it in the database, so these commands see every schedule from
any machine. Subcommands: list, forget.`,
		RunE: a.groupRunE(),
	}
	cmd.AddCommand(a.periodicListCommand(), a.periodicForgetCommand())
	return cmd
}

func (a *app) periodicListCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "List each schedule with its last and next slot",
		Long: `List each schedule recorded in the database, by name: its spec (a cron
expression with its time zone, or an interval), the kind and queue of its jobs,
the last slot enqueued and its job, and the next slot. A next slot older than
the schedule's grace period (its Grace, recorded by the processes that run it;
` + cli.FormatDuration(leasehold.DefaultPeriodicGrace) + `, the default, for a schedule no process of schema version 15 or later has recorded) is
flagged overdue: no process enqueued it, probably because none runs the
schedule any more.`,
		Args: argNames(),
		RunE: a.runE(func(cmd *cobra.Command, _ []string) error {
			return a.withOperator(cmd, func(ctx context.Context, c *leasehold.Client) (func(now time.Time) error, error) {
				rows, err := c.ListPeriodic(ctx)
				if err != nil {
					return nil, err
				}
				return func(now time.Time) error {
					views := make([]view.PeriodicView, len(rows))
					for i, r := range rows {
						views[i] = view.NewPeriodicView(r, now)
					}
					return a.print(views, func(w io.Writer) error { return cli.RenderPeriodic(w, rows, now) })
				}, nil
			})
		}),
	}
}

// periodicForgetResult is what `periodic forget --json` prints. Forgotten
// is always true: an unknown schedule is an error (exit code 3).
type periodicForgetResult struct {
	Name      string `json:"name"`
	Forgotten bool   `json:"forgotten"`
}

func (a *app) periodicForgetCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "forget NAME",
		Short: "Delete the record of a schedule no process runs any more",
		Long: `Delete the database record of schedule NAME, so that ` + "`periodic list`" + ` no longer
shows it. Its jobs are kept. A process still running the schedule records it
again, and goes on with the next slot due. A NAME with no record exits with
code 3 (not found), as an unknown job id does; an empty NAME, or one no
schedule could have, is a usage error (exit code 2).`,
		Args: argNames("NAME"),
		RunE: a.runE(func(cmd *cobra.Command, args []string) error {
			if strings.TrimSpace(args[0]) == "" {
				return cli.Usagef("periodic forget takes a schedule NAME, got an empty one (see %s --help)", cmd.CommandPath())
			}
			if err := leasehold.ValidatePeriodicName(args[0]); err != nil {
				return err
			}
			return a.withClient(cmd, func(ctx context.Context, c *leasehold.Client) error {
				ok, err := c.ForgetPeriodic(ctx, args[0])
				if err != nil {
					return err
				}
				if !ok {
					return &cli.Error{Code: cli.ExitNotFound, Err: fmt.Errorf("no schedule %s recorded", shownName(args[0]))}
				}
				return a.print(periodicForgetResult{Name: args[0], Forgotten: true}, func(w io.Writer) error {
					_, err := fmt.Fprintf(w, "schedule %s forgotten\n", shownName(args[0]))
					return err
				})
			})
		}),
	}
}

// shownName is a schedule name as typed, cut to 80 characters on one line
// with its control characters escaped, for a message that echoes it.
func shownName(name string) string {
	return cli.Printable(cli.Truncate(name, 80))
}
