package main

import (
	"github.com/spf13/cobra"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
)

func (a *app) jobsCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "jobs",
		Short: "List, inspect, retry, cancel and delete jobs; list stuck ones",
		RunE:  a.groupRunE(),
	}
	cmd.AddCommand(a.jobsListCommand(), a.jobsShowCommand(), a.jobsRetryCommand(),
		a.jobsCancelCommand(), a.jobsDeleteCommand(), a.jobsStuckCommand())
	return cmd
}

// groupRunE is the RunE of a command that only groups subcommands: with
// no arguments it prints its help; an argument is an unknown subcommand,
// a usage error (exit 2), so that a typo in a script does not pass for
// success.
func (a *app) groupRunE() func(*cobra.Command, []string) error {
	return a.runE(func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			return cli.Usagef("unknown command %q for %q (see %s --help)", args[0], cmd.CommandPath(), cmd.CommandPath())
		}
		return cmd.Help()
	})
}
