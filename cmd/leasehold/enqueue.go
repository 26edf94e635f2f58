package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/jobkinds"
	"github.com/leasehold/leasehold/view"
)

type enqueueFlags struct {
	args, metadata, runAt string
	queue, uniqueKey      string
	priority, maxAttempts int
	uniqueWhileUnfinished bool
	uniqueWindow          time.Duration
}

// maxUniqueWindow bounds --unique-window.
const maxUniqueWindow = 3650 * cli.Day

// enqueueFields names the flag of each insert option the library may
// refuse.
var enqueueFields = cli.FieldFlags{"queue": "--queue", "args": "--args", "metadata": "--metadata",
	"unique_key": "--unique-key", "unique_scope": "--unique-while-unfinished", "unique_window": "--unique-window",
	"priority": "--priority", "max_attempts": "--max-attempts", "run_at": "--run-at"}

func (a *app) enqueueCommand() *cobra.Command {
	var f enqueueFlags
	cmd := &cobra.Command{
		Use:   "enqueue KIND",
		Short: "Add a job of kind KIND",
		Long: `Add a job. KIND names the worker that runs it: one of your application's
kinds, or one built into ` + "`leasehold work`" + ` (` + strings.Join(jobkinds.Kinds(), ", ") + `);
--args is its JSON object. With --unique-key the insert is idempotent: while a
job of the same kind holds that key, it is returned instead (exit code 0,
nothing enqueued). The scope is part of the key: with --unique-key alone, a job
inserted with that key and neither --unique-while-unfinished nor
--unique-window holds it in every state until it is deleted or purged; with
--unique-while-unfinished, a job inserted with that flag holds it until it is
completed, failed or cancelled; with --unique-window D, a job inserted with the
same window length holds it within its window of the database clock. A job that
holds the key under another scope or window does not block the insert: the key
then names several jobs.
--args @FILE reads the JSON object from FILE, and --args - from standard
input, for arguments too long for a command line (--metadata likewise).`,
		Example: `  leasehold enqueue leasehold.demo.charge --args '{"payment_id":"p-1","amount_cents":1200}' --unique-key p-1
  leasehold enqueue leasehold.sleep --args '{"duration":"2s"}' --queue slow --run-at 10m
  leasehold enqueue email.send --args @email.json
  generate-args | leasehold enqueue email.send --args -`,
		Args: argNames("KIND"),
		RunE: a.runE(func(cmd *cobra.Command, args []string) error {
			if err := cli.RefuseEmpty(cmd.Flags(), "args", "metadata", "queue", "run-at", "unique-key"); err != nil {
				return err
			}
			return a.enqueue(cmd, args[0], &f)
		}),
	}
	fl := cmd.Flags()
	fl.StringVar(&f.args, "args", "{}", "job arguments, a JSON object (@FILE reads it from FILE, - from standard input)")
	fl.StringVar(&f.metadata, "metadata", "", "metadata, a JSON object stored with the job (@FILE or - as for --args)")
	fl.StringVar(&f.queue, "queue", leasehold.DefaultQueue, "queue")
	fl.IntVar(&f.priority, "priority", 0, fmt.Sprintf("priority, 0 (first) to %d", leasehold.MaxPriority))
	fl.StringVar(&f.runAt, "run-at", "", "when the job may run: RFC 3339 time, or a delay such as 90s, 15m, 2d (default now)")
	fl.IntVar(&f.maxAttempts, "max-attempts", leasehold.DefaultMaxAttempts, fmt.Sprintf("retry budget, 1 to %d", leasehold.MaxMaxAttempts))
	fl.StringVar(&f.uniqueKey, "unique-key", "", "idempotency key of the insert")
	fl.BoolVar(&f.uniqueWhileUnfinished, "unique-while-unfinished", false,
		"the unique key is held only until its job is completed, failed or cancelled")
	fl.Var(cli.NewDurationValue(&f.uniqueWindow, 0, 0, maxUniqueWindow), "unique-window",
		"the unique key is held only within windows of this length of the database clock (e.g. 1h, 24h, 7d)")
	return cmd
}

// insertOpts validates the flags into insert options; stdin serves
// "--args -" and "--metadata -", read until ctx is done.
func (f *enqueueFlags) insertOpts(ctx context.Context, kind string, stdin io.Reader) (leasehold.RawArgs, *leasehold.InsertOpts, error) {
	if err := leasehold.ValidateKind(kind); err != nil {
		return leasehold.RawArgs{}, nil, cli.UsageError(err)
	}
	if f.args == "-" && f.metadata == "-" {
		return leasehold.RawArgs{}, nil, cli.Usagef("--args and --metadata cannot both read standard input")
	}
	text, err := cli.ReadValue(ctx, "--args", f.args, stdin)
	if err != nil {
		return leasehold.RawArgs{}, nil, err
	}
	args, err := cli.ParseJSONObject("--args", text)
	if err != nil {
		return leasehold.RawArgs{}, nil, err
	}
	opts := &leasehold.InsertOpts{Queue: f.queue, Priority: f.priority, MaxAttempts: f.maxAttempts,
		UniqueKey: f.uniqueKey, UniqueWindow: f.uniqueWindow}
	if f.uniqueWhileUnfinished {
		opts.UniqueScope = leasehold.UniqueWhileUnfinished
	}
	if err := leasehold.ValidateQueue(f.queue); err != nil {
		return leasehold.RawArgs{}, nil, cli.FlagError("--queue", err)
	}
	if err := f.checkUnique(); err != nil {
		return leasehold.RawArgs{}, nil, err
	}
	if f.priority < 0 || f.priority > leasehold.MaxPriority {
		return leasehold.RawArgs{}, nil, cli.Usagef("--priority %d is out of range 0..%d", f.priority, leasehold.MaxPriority)
	}
	if f.maxAttempts < 1 || f.maxAttempts > leasehold.MaxMaxAttempts {
		return leasehold.RawArgs{}, nil, cli.Usagef("--max-attempts %d is out of range 1..%d", f.maxAttempts, leasehold.MaxMaxAttempts)
	}
	if f.metadata != "" {
		meta, err := cli.ReadValue(ctx, "--metadata", f.metadata, stdin)
		if err != nil {
			return leasehold.RawArgs{}, nil, err
		}
		if opts.Metadata, err = cli.ParseJSONObject("--metadata", meta); err != nil {
			return leasehold.RawArgs{}, nil, err
		}
	}
	if f.runAt != "" {
		if opts.RunAt, opts.RunIn, err = cli.ParseRunAt(f.runAt, time.Now()); err != nil {
			return leasehold.RawArgs{}, nil, err
		}
	}
	return leasehold.RawArgs{KindName: kind, JSON: args}, opts, nil
}

// checkUnique checks the unique flags together, as flags: a scope or a
// window needs a key, and a window is at least leasehold.MinUniqueWindow,
// in whole microseconds.
func (f *enqueueFlags) checkUnique() error {
	w := f.uniqueWindow
	switch {
	case w > 0 && w < leasehold.MinUniqueWindow:
		return cli.Usagef("--unique-window %s is too short (minimum %s; 0s for no window)", w, leasehold.MinUniqueWindow)
	case w%time.Microsecond != 0:
		return cli.Usagef("--unique-window %s is not a whole number of microseconds", w)
	case f.uniqueKey == "" && w > 0:
		return cli.Usagef("--unique-window needs --unique-key")
	case f.uniqueKey == "" && f.uniqueWhileUnfinished:
		return cli.Usagef("--unique-while-unfinished needs --unique-key")
	}
	return nil
}

func (a *app) enqueue(cmd *cobra.Command, kind string, f *enqueueFlags) error {
	args, opts, err := f.insertOpts(cmd.Context(), kind, a.stdin)
	if err != nil {
		return err
	}
	return a.withOperator(cmd, func(ctx context.Context, c *leasehold.Client) (func(now time.Time) error, error) {
		res, err := c.Insert(ctx, args, opts)
		if err != nil {
			return nil, enqueueFields.Restate(err)
		}
		return func(now time.Time) error { return a.printEnqueued(res, now) }, nil
	})
}

// printEnqueued reports an inserted (or duplicate) job.
func (a *app) printEnqueued(res *leasehold.InsertResult, now time.Time) error {
	out := struct {
		ID        int64        `json:"id"`
		Duplicate bool         `json:"duplicate"`
		Job       view.JobView `json:"job"`
	}{res.Job.ID, res.Duplicate, view.NewJobView(res.Job, now)}
	return a.print(out, func(w io.Writer) error {
		j := res.Job
		if res.Duplicate {
			_, err := fmt.Fprintf(w, "job %d already has unique key %q (%s, %s); nothing enqueued\n", j.ID, j.UniqueKey, j.Kind, j.State)
			return err
		}
		_, err := fmt.Fprintf(w, "enqueued job %d (%s, queue %s, runs %s)\n", j.ID, j.Kind, j.Queue, cli.Relative(j.RunAt, now))
		return err
	})
}
