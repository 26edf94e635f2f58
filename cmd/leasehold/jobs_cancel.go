package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/view"
)

func (a *app) jobsCancelCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "cancel ID",
		Short: "Cancel a job (a processing one at its next heartbeat)",
		Long: `Cancel a pending, stuck or reconciling job at once (a reconciling job's
reconcile job then finds nothing left to decide). A processing job is marked:
its handler is cancelled at the next heartbeat and the job ends cancelled,
unless the attempt completes or fails first (a handler that returns nil
completes it) (if
its worker died, the watcher cancels it when the lease expires; in a queue
that reconciles, its reconciler decides first: completed if the work was done,
cancelled where a retry would run it again). Cancelling a reconcile job that has
not decided sends the job it reconciles, if still reconciling, to stuck for an
operator to retry or cancel; the output names that job. A finished job is left
alone (exit code 1).`,
		Args: argNames("ID"),
		RunE: a.runE(func(cmd *cobra.Command, args []string) error {
			id, err := cli.ParseJobID(args[0])
			if err != nil {
				return err
			}
			return a.withOperator(cmd, func(ctx context.Context, c *leasehold.Client) (func(now time.Time) error, error) {
				row, err := c.CancelJob(ctx, id)
				if errors.Is(err, leasehold.ErrJobFinished) && row != nil {
					return nil, cli.Failf("job %d is already %s; nothing to cancel", id, row.State)
				}
				if err != nil {
					return nil, jobErr(id, err)
				}
				stranded := strandedJob(ctx, c, row)
				return func(now time.Time) error {
					return a.print(view.NewJobView(row, now), func(w io.Writer) error {
						if _, err := fmt.Fprintln(w, cancelMessage(row, now)); err != nil {
							return err
						}
						if stranded == nil {
							return nil
						}
						_, err := fmt.Fprintln(w, strandedMessage(row, stranded))
						return err
					})
				}, nil
			})
		}),
	}
}

// cancelMessage says what cancelling job row did, by the database clock
// now. A processing job whose lease has expired has no worker left to see
// the request at a heartbeat: the watcher ends it when it next moves
// expired leases (a reconciling queue's reconciler first decides whether
// the work was done).
func cancelMessage(row *leasehold.JobRow, now time.Time) string {
	switch {
	case row.State != leasehold.StateProcessing:
		return fmt.Sprintf("job %d cancelled", row.ID)
	case row.LeaseUntil.Before(now):
		return fmt.Sprintf("job %d is processing but its lease expired: cancellation requested, the stuck watcher "+
			"ends the job at its next pass (in a queue that reconciles, its reconciler decides first)", row.ID)
	default:
		return fmt.Sprintf("job %d is processing: cancellation requested, its handler stops at the next heartbeat", row.ID)
	}
}

// strandedJob returns the job that rec, a reconcile job just cancelled,
// was reconciling, when the cancel sent it to stuck (at the attempt rec
// reconciled, its last_error naming rec); nil otherwise, or when it
// cannot be read (the cancel itself succeeded: its line stands alone).
func strandedJob(ctx context.Context, c *leasehold.Client, rec *leasehold.JobRow) *leasehold.JobRow {
	var a leasehold.ReconcileArgs
	if rec.Kind != leasehold.ReconcileKind && !strings.HasPrefix(rec.UniqueKey, "reconcile:") {
		return nil
	}
	if err := json.Unmarshal(rec.Args, &a); err != nil || a.JobID <= 0 {
		return nil
	}
	j, err := c.GetJob(ctx, a.JobID)
	if err != nil || j.State != leasehold.StateStuck || j.Attempt != a.Attempt ||
		!strings.Contains(j.LastError, fmt.Sprintf("reconcile job %d ", rec.ID)) {
		return nil
	}
	return j.JobRow
}

// strandedMessage says that cancelling reconcile job rec sent job to
// stuck, and how to decide it.
func strandedMessage(rec, job *leasehold.JobRow) string {
	return fmt.Sprintf("job %d, which reconcile job %d was deciding (attempt %d), is now stuck for an operator: "+
		"find out whether its attempt had its effect, then leasehold jobs retry %d or leasehold jobs cancel %d",
		job.ID, rec.ID, job.Attempt, job.ID, job.ID)
}
