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

func (a *app) periodicCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "periodic",
		Short: "Show the schedules of periodic jobs",
		Long: `Periodic jobs are configured in the processes that run them (Config.Periodic,
Client.AddPeriodic, or ` + "`leasehold work --periodic`" + `); every process running a
schedule records it in the database, so these commands see every schedule from
any machine. Subcommands: list, forget.`,
		Args: argNames(),
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
the grace period (` + leasehold.DefaultPeriodicGrace.String() + ` by default) is flagged overdue: no process enqueued it,
probably because none runs the schedule any more.`,
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

// periodicForgetResult is what `periodic forget --json` prints.
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
again, and goes on with the next slot due.`,
		Args: argNames("NAME"),
		RunE: a.runE(func(cmd *cobra.Command, args []string) error {
			return a.withClient(cmd, func(ctx context.Context, c *leasehold.Client) error {
				ok, err := c.ForgetPeriodic(ctx, args[0])
				if err != nil {
					return err
				}
				return a.print(periodicForgetResult{Name: args[0], Forgotten: ok}, func(w io.Writer) error {
					msg := "schedule %s forgotten\n"
					if !ok {
						msg = "no schedule %s recorded\n"
					}
					_, err := fmt.Fprintf(w, msg, cli.Truncate(args[0], 80))
					return err
				})
			})
		}),
	}
}
