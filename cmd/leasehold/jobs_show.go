package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
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
						if err := cli.RenderJob(w, info, now); err != nil {
							return err
						}
						return renderResolutions(w, info.Attempts)
					})
				}, nil
			})
		}),
	}
}

// renderResolutions prints, below the attempt history, the reconciler's
// decision recorded on each attempt that has one (an attempt whose lease
// expired in a reconciling queue), whole: the history's table has no room
// for it. It prints nothing when no attempt has one.
func renderResolutions(w io.Writer, attempts []*leasehold.Attempt) error {
	var t *cli.Table
	for _, a := range attempts {
		if a.Resolution == "" {
			continue
		}
		if t == nil {
			if _, err := fmt.Fprintln(w); err != nil {
				return fmt.Errorf("write: %w", err)
			}
			t = cli.NewTable(w, "ATTEMPT", "RESOLUTION")
		}
		t.Row(strconv.Itoa(a.Attempt), a.Resolution)
	}
	if t == nil {
		return nil
	}
	return t.Flush()
}
