package main

import (
	"context"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/view"
)

func (a *app) jobsShowCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "show ID",
		Short: "Show a job, its lease (owner, time left) and its attempt history",
		Args:  argNames("ID"),
		RunE: a.runE(func(cmd *cobra.Command, args []string) error {
			id, err := cli.ParseJobID(args[0])
			if err != nil {
				return err
			}
			return a.withOperator(cmd, func(ctx context.Context, c *leasehold.Client) (func(now time.Time) error, error) {
				info, err := c.GetJob(ctx, id)
				if err != nil {
					return nil, jobErr(id, err)
				}
				return func(now time.Time) error {
					return a.print(view.NewJobInfoView(info, now), func(w io.Writer) error {
						return cli.RenderJob(w, info, now)
					})
				}, nil
			})
		}),
	}
}
