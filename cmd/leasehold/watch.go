package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/work"
	"github.com/leasehold/leasehold/view"
)

type watchFlags struct {
	interval    time.Duration
	statusEvery time.Duration
	once        bool
	// passTimeout bounds each pass; 0 for watchPassBound's default.
	passTimeout time.Duration
	policy      policyFlags
}

// minPassTimeout is the least default bound of a pass: the bound the
// library's own watcher and the lease engine's statements have.
const minPassTimeout = 30 * time.Second

// passBound is how long one pass may take: --pass-timeout, else the
// interval and at least minPassTimeout. A pass on a connection that
// stopped answering (a server gone without resetting it, as in a
// failover whose old primary was powered off) would otherwise wait as
// long as TCP retransmits, a quarter of an hour, and move nothing
// meanwhile.
func (f *watchFlags) passBound() time.Duration {
	if f.passTimeout > 0 {
		return f.passTimeout
	}
	return max(f.interval, minPassTimeout)
}

func (a *app) watchCommand() *cobra.Command {
	var f watchFlags
	cmd := &cobra.Command{
		Use:   "watch",
		Short: "Run the stuck watcher on its own: requeue, flag, reconcile or fail expired leases",
		Long: `Run the stuck watcher on its own, until interrupted (or once with --once):
processing jobs whose lease expired go back to pending, to stuck in the queues
named by --flag-stuck, to reconciling (with a reconcile job) in the queues
named by --reconcile (its reconcile jobs of the kind, budget and priority
given by --reconcile-kind, --reconcile-max-attempts and --reconcile-priority:
the workers' ReconcilePolicy), to failed when their retry budget is spent
(elsewhere), or to
cancelled when an operator asked for it (outside the --reconcile queues, where
the reconciler decides first). Each moved job is printed (one JSON
object per line with --json). It says when it starts and, every
--status-every while nothing expires, that it is still watching (on standard
error with --json). A pass that fails (a dropped connection, a locked
database, a pass that took longer than --pass-timeout) is reported on standard
error and tried again at the next interval; with --once, or when the SQLite
file was replaced or is corrupt, it exits 1.
Several watchers at once are harmless.`,
		Args: argNames(),
		RunE: a.runE(func(cmd *cobra.Command, _ []string) error {
			keepRunningOnBrokenPipe()
			return a.watch(cmd, &f)
		}),
	}
	fl := cmd.Flags()
	fl.Var(cli.NewDurationValue(&f.interval, leasehold.DefaultWatcherInterval, 10*time.Millisecond, 24*time.Hour),
		"interval", "time between passes")
	fl.Var(cli.NewDurationValue(&f.statusEvery, time.Minute, 0, 24*time.Hour),
		"status-every", "while nothing expires, say so this often (0: never)")
	fl.BoolVar(&f.once, "once", false, "run one pass and exit")
	fl.Var(cli.NewDurationValue(&f.passTimeout, 0, 0, 24*time.Hour),
		"pass-timeout", "longest a pass may take before it is given up and tried again (0: the interval, at least 30s)")
	f.policy.add(fl)
	return cmd
}

// minStatusEvery is the shortest --status-every other than 0 (never), the
// shortest --interval.
const minStatusEvery = 10 * time.Millisecond

func (a *app) watch(cmd *cobra.Command, f *watchFlags) error {
	if f.statusEvery > 0 && f.statusEvery < minStatusEvery {
		return cli.Usagef("--status-every %s is too short (minimum %s, or 0 for never)",
			cli.FormatDuration(f.statusEvery), cli.FormatDuration(minStatusEvery))
	}
	queues, err := f.policy.queues()
	if err != nil {
		return err
	}
	db, err := a.open(cmd, false)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.CheckSchema(cmd.Context()); err != nil {
		return err
	}
	c, err := leasehold.NewClient(leasehold.Config{Driver: db.Driver, Queues: queues, Logger: a.logger(slog.LevelError)})
	if errors.Is(err, leasehold.ErrInvalidConfig) {
		return cli.UsageError(err)
	}
	if err != nil {
		return err
	}
	ctx := cmd.Context()
	if !f.once {
		a.watchStatus("watching %s every %s for expired leases%s", db.Target, cli.FormatDuration(f.interval), flagNote(f.policy.flagStuck))
	}
	t := time.NewTicker(f.interval)
	defer t.Stop()
	st := watchState{lastNews: time.Now()}
	for {
		moved, err := rescueBounded(ctx, c, f.passBound())
		if ctx.Err() != nil {
			// Interrupted: the batches that committed before the
			// interruption moved their jobs all the same.
			return a.printRescued(moved, false)
		}
		if err != nil && len(moved) > 0 {
			// The batches before the failure committed: their jobs moved.
			if err := a.printRescued(moved, false); err != nil {
				return err
			}
		}
		switch {
		case err != nil && (f.once || work.Fatal(err)):
			return err
		case err != nil:
			// A database that went away for a moment: the next pass
			// tries again, as the library's own watcher does.
			fmt.Fprintf(a.stderr, "%s leasehold watch: pass failed, trying again in %s: %v\n",
				time.Now().Format(time.TimeOnly), cli.FormatDuration(f.interval), err)
		default:
			if err := a.printRescued(moved, f.once); err != nil {
				return err
			}
			if f.once {
				return nil
			}
			a.idleStatus(&st, len(moved), f.statusEvery)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// rescueBounded runs one pass of c's watcher, given up after bound. With
// an error it returns the jobs the pass's earlier batches moved.
func rescueBounded(ctx context.Context, c *leasehold.Client, bound time.Duration) ([]*leasehold.RescuedJob, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, bound, fmt.Errorf("pass timed out after %s", cli.FormatDuration(bound)))
	defer cancel()
	moved, err := c.RescueExpired(ctx)
	if err != nil && ctx.Err() != nil {
		return moved, fmt.Errorf("%w: %w", context.Cause(ctx), err)
	}
	return moved, err
}

// watchState is what the idle line of `watch` reports.
type watchState struct {
	rescued  int
	lastNews time.Time // last rescue or status line
}

// idleStatus records moved and, when nothing has moved or been said for
// every, prints a line saying the watcher is still at work.
func (a *app) idleStatus(st *watchState, moved int, every time.Duration) {
	now := time.Now()
	if moved > 0 {
		st.rescued += moved
		st.lastNews = now
		return
	}
	if every <= 0 || now.Sub(st.lastNews) < every {
		return
	}
	a.watchStatus("watching: %d rescued so far, nothing expired in the last %s", st.rescued, cli.FormatDuration(now.Sub(st.lastNews)))
	st.lastNews = now
}

// watchStatus prints a status line of `watch`, timestamped: on stdout, or
// on stderr with --json (stdout holds one JSON object per moved job).
func (a *app) watchStatus(format string, args ...any) {
	w := a.stdout
	if a.jsonOut {
		w = a.stderr
	}
	fmt.Fprintf(w, "%s "+format+"\n", append([]any{time.Now().Format(time.TimeOnly)}, args...)...)
}

// flagNote names the queues whose expired jobs are flagged stuck.
func flagNote(queues []string) string {
	if len(queues) == 0 {
		return ""
	}
	return " (flagging them stuck in " + strings.Join(queues, ", ") + ")"
}

func (a *app) printRescued(moved []*leasehold.RescuedJob, once bool) error {
	if a.jsonOut {
		enc := json.NewEncoder(a.stdout)
		for _, r := range moved {
			if err := enc.Encode(view.NewRescuedView(r)); err != nil {
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
