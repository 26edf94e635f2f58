package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/leasehold/leasehold/internal/cli"
)

func (a *app) migrateCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "migrate",
		Short: "Create or upgrade the leasehold tables (idempotent)",
		Long: `Create or upgrade the leasehold tables. Safe to run again, and from several
processes at once. With the default SQLite database it creates ./leasehold.db.`,
		Args: argNames(),
		RunE: a.runE(func(cmd *cobra.Command, _ []string) error {
			db, err := a.open(cmd, true)
			if err != nil {
				return err
			}
			defer db.Close()
			if err := db.Driver.Migrate(cmd.Context()); err != nil {
				return cli.Failf("migrate %s: %w", db.Target, err)
			}
			out := struct {
				Database string `json:"database"`
				Migrated bool   `json:"migrated"`
			}{db.Target.String(), true}
			return a.print(out, func(w io.Writer) error {
				_, err := fmt.Fprintf(w, "migrated %s\n", db.Target)
				return err
			})
		}),
	}
}
