package main

import (
	"github.com/spf13/cobra"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
)

func (a *app) jobsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "jobs",
		Short: "List, inspect, retry and cancel jobs",
		RunE: a.runE(func(cmd *cobra.Command, args []string) error {
			if len(args) > 0 {
				return cli.Usagef("unknown command %q for %q (see %s --help)", args[0], cmd.CommandPath(), cmd.CommandPath())
			}
			return cmd.Help()
		}),
	}
	cmd.AddCommand(a.jobsListCommand(), a.jobsShowCommand(), a.jobsRetryCommand(),
		a.jobsCancelCommand(), a.jobsDeleteCommand(), a.jobsStuckCommand())
	return cmd
}
