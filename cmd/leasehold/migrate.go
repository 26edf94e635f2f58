package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/driver"
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
			res, err := db.Driver.Migrate(cmd.Context())
			if err != nil {
				return cli.Failf("migrate %s: %w", db.Target, err)
			}
			out := struct {
				Database string `json:"database"`
				Migrated bool   `json:"migrated"`
				From     int    `json:"from_version"`
				Version  int    `json:"version"`
				Applied  int    `json:"applied"`
			}{db.Target.String(), res.Applied > 0, res.From, res.To, res.Applied}
			return a.print(out, func(w io.Writer) error {
				_, err := fmt.Fprintln(w, migrateMessage(db.Target.String(), res))
				return err
			})
		}),
	}
}

// migrateMessage says what Migrate did to the database named target.
func migrateMessage(target string, res *driver.MigrateResult) string {
	if res.Applied == 0 {
		return fmt.Sprintf("%s already at version %d", target, res.To)
	}
	return fmt.Sprintf("%s migrated to version %d (from %d)", target, res.To, res.From)
}
