package main

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/spf13/cobra"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/internal/cli"
)

type watchFlags struct {
	interval  time.Duration
	once      bool
	flagStuck []string
}

func (a *app) watchCommand() *cobra.Command {
	var f watchFlags
	cmd := &cobra.Command{
		Use:   "watch",
		Short: "Run the stuck watcher on its own: return expired leases to their queue",
		Long: `Run the stuck watcher on its own, until interrupted (or once with --once):
processing jobs whose lease expired go back to pending, to stuck in the queues
named by --flag-stuck, to failed when their retry budget is spent, or to
cancelled when an operator asked for it. Each moved job is printed (one JSON
object per line with --json). Several watchers at once are harmless.`,
		Args: argNames(),
		RunE: a.runE(func(cmd *cobra.Command, _ []string) error { return a.watch(cmd, &f) }),
	}
	fl := cmd.Flags()
	fl.Var(cli.NewDurationValue(&f.interval, leasehold.DefaultWatcherInterval, 10*time.Millisecond, 24*time.Hour),
		"interval", "time between passes")
	fl.BoolVar(&f.once, "once", false, "run one pass and exit")
	fl.StringSliceVar(&f.flagStuck, "flag-stuck", nil, "queues whose expired jobs are flagged stuck instead of requeued")
	return cmd
}

func (a *app) watch(cmd *cobra.Command, f *watchFlags) error {
	queues := map[string]leasehold.QueueConfig{}
	for _, q := range f.flagStuck {
		if err := leasehold.ValidateQueue(q); err != nil {
			return cli.UsageError(fmt.Errorf("--flag-stuck: %w", err))
		}
		queues[q] = leasehold.QueueConfig{FlagStuck: true}
	}
	db, err := a.open(cmd, false)
	if err != nil {
		return err
	}
	defer db.Close()
	c, err := leasehold.NewClient(leasehold.Config{Driver: db.Driver, Queues: queues, Logger: a.logger(slog.LevelError)})
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	t := time.NewTicker(f.interval)
	defer t.Stop()
	for {
		moved, err := c.RescueExpired(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			return err
		}
		if err := a.printRescued(moved, f.once); err != nil {
			return err
		}
		if f.once {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (a *app) printRescued(moved []*leasehold.RescuedJob, once bool) error {
	if a.jsonOut {
		enc := json.NewEncoder(a.stdout)
		for _, r := range moved {
			if err := enc.Encode(cli.NewRescuedView(r)); err != nil {
				return fmt.Errorf("write JSON: %w", err)
			}
		}
		return nil
	}
	if len(moved) == 0 && once {
		_, err := fmt.Fprintln(a.stdout, "no expired leases")
		return err
	}
	for _, r := range moved {
		_, err := fmt.Fprintf(a.stdout, "%s job %d (%s, queue %s): lease of %s expired at attempt %d -> %s\n",
			time.Now().Format(time.TimeOnly), r.ID, r.Kind, r.Queue, r.Owner, r.Attempt, r.NewState)
		if err != nil {
			return err
		}
	}
	return nil
}
