package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/demo"
)

func (a *app) demoCommand() *cobra.Command {
	var o demo.Options
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Tell the lease story for real: payments, worker processes, a SIGKILL, a freeze",
		Long: `Run the lease story on a real database, in well under a minute: enqueue
payment jobs; start worker processes (this binary's ` + "`work`" + ` command) that charge
them through an in-process stand-in payment provider which honours
idempotency keys and sometimes stalls longer than the lease TTL (heartbeats
keep those leases); SIGKILL one worker and freeze another (SIGSTOP) in the
middle of a charge; let the watcher bring their jobs back and the other
workers take them over (so the story needs at least three workers); then
check that every payment was completed, charged once and recorded once.

The database is a fresh SQLite file, ./` + demo.DefaultPath + `, unless --db is given
(the demo ignores $` + cli.EnvDatabaseURL + `, so it never writes into a configured
database by accident). Its jobs go to a queue of their own (demo-<run id>).
Exit code 1 if a payment was lost or charged twice.`,
		Example: `  leasehold demo
  leasehold demo --db postgres://localhost/leasehold_demo`,
		Args: argNames(),
		RunE: a.runE(func(cmd *cobra.Command, _ []string) error { return a.demo(cmd, o) }),
	}
	fl := cmd.Flags()
	fl.IntVar(&o.Payments, "payments", demo.DefaultPayments, "payment jobs to enqueue (1 to 5000)")
	fl.IntVar(&o.Workers, "workers", demo.DefaultWorkers, fmt.Sprintf("worker processes (%d to %d)", demo.MinWorkers, maxDemoWorkers))
	fl.Var(cli.NewDurationValue(&o.TTL, demo.DefaultTTL, 500*time.Millisecond, time.Minute), "ttl", "lease TTL of the workers, 500ms to 1m")
	fl.Var(cli.NewDurationValue(&o.Timeout, demo.DefaultTimeout, time.Second, time.Hour), "timeout", "give up after this long")
	cmd.AddCommand(a.demoReconcileCommand())
	return cmd
}

// maxDemoWorkers bounds --workers of the demo stories.
const maxDemoWorkers = 16

// demoOptions checks o's flags, --workers against minWorkers (the fewest
// the story can be told truthfully with, for the reason why), and fills
// in the database, the workers' executable and the output.
func (a *app) demoOptions(cmd *cobra.Command, o *demo.Options, minWorkers int, why string) error {
	if o.Payments < 1 || o.Payments > 5000 {
		return cli.Usagef("--payments %d is out of range 1..5000", o.Payments)
	}
	if o.Workers < minWorkers || o.Workers > maxDemoWorkers {
		return cli.Usagef("--workers %d is out of range %d..%d%s", o.Workers, minWorkers, maxDemoWorkers, why)
	}
	t := cli.Target{Dialect: cli.SQLite, Path: demo.DefaultPath, Default: true}
	if cmd.Flags().Changed("db") {
		var err error
		if t, err = a.target(cmd); err != nil {
			return err
		}
	}
	exe, err := os.Executable()
	if err != nil {
		return cli.Failf("find the leasehold executable for the workers: %w", err)
	}
	o.Target, o.Fresh, o.Executable = t, t.Default, exe
	o.Out, o.TTY = a.stdout, isTerminal(a.stdout)
	if a.jsonOut {
		o.Out, o.TTY = a.stderr, false
	}
	return nil
}

func (a *app) demo(cmd *cobra.Command, o demo.Options) error {
	if err := a.demoOptions(cmd, &o, demo.MinWorkers,
		": the story kills one worker and freezes another, and needs a third to take their leases over"); err != nil {
		return err
	}
	s, err := demo.Run(cmd.Context(), o)
	if err != nil {
		return err
	}
	return a.demoResult(s, s.OK)
}

// demoResult prints s, a demo's summary (as JSON with --json), and fails
// unless ok.
func (a *app) demoResult(s interface{ Print(io.Writer) }, ok bool) error {
	if a.jsonOut {
		if err := cli.WriteJSON(a.stdout, s); err != nil {
			return err
		}
	} else {
		s.Print(a.stdout)
	}
	if !ok {
		return &cli.Error{Code: cli.ExitFailure, Err: errDemoFailed}
	}
	return nil
}

func (a *app) demoReconcileCommand() *cobra.Command {
	var o demo.Options
	cmd := &cobra.Command{
		Use:   "reconcile",
		Short: "Tell the reconciliation story: payments charged while the system shows them pending, healed",
		Long: `Run the reconciliation story on a real database: the payment queue is under
the reconcile policy (QueueConfig.Reconcile); worker processes charge payments
through an in-process stand-in provider; two workers are SIGKILLed right after
the provider recorded their charge, and the provider loses the webhook of some
payments (it charges them and never says so). Both leave payments charged at
the provider while the system shows them pending. The stuck watcher sends the
killed workers' jobs to reconciling with a reconcile job each; a scan finds the
payments pending too long and inserts one heal job per payment. Every heal
asks the provider by the payment's idempotency key and records the charge in
the ledger in one transaction with its fenced completion.

The summary counts the payments charged while pending, those healed, those
charged twice (must be 0), and compares ledger rows with charges. Exit code 1
if anything does not add up. The database is a fresh SQLite file,
./` + demo.DefaultPath + `, unless --db is given.`,
		Example: `  leasehold demo reconcile
  leasehold demo reconcile --db postgres://localhost/leasehold_demo`,
		Args: argNames(),
		RunE: a.runE(func(cmd *cobra.Command, _ []string) error {
			if err := a.demoOptions(cmd, &o, demo.MinReconcileWorkers, ""); err != nil {
				return err
			}
			s, err := demo.RunReconcile(cmd.Context(), o)
			if err != nil {
				return err
			}
			return a.demoResult(s, s.OK)
		}),
	}
	fl := cmd.Flags()
	fl.IntVar(&o.Payments, "payments", demo.DefaultPayments, "payment jobs to enqueue (1 to 5000)")
	fl.IntVar(&o.Workers, "workers", demo.DefaultWorkers, fmt.Sprintf("worker processes (%d to %d)", demo.MinReconcileWorkers, maxDemoWorkers))
	fl.Var(cli.NewDurationValue(&o.TTL, demo.DefaultTTL, 500*time.Millisecond, time.Minute), "ttl", "lease TTL of the workers, 500ms to 1m")
	fl.Var(cli.NewDurationValue(&o.Timeout, demo.DefaultTimeout, time.Second, time.Hour), "timeout", "give up after this long")
	return cmd
}
