package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
)

// app holds one invocation's output streams and global flags.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer
	// lookupEnv reads the environment (os.LookupEnv): a variable set but
	// empty is not an unset one.
	lookupEnv func(string) (string, bool)
	dbFlag    string
	jsonOut   bool
	// ran is set once a command's RunE starts: errors before that are
	// cobra rejecting the command line (usage errors).
	ran bool
}

const rootLong = `leasehold operates a leasehold job queue: jobs live in your SQL database
(PostgreSQL or an embedded SQLite file) and every claim is a fenced lease.

Start with the demo:  leasehold demo

The database comes from --db, else $LEASEHOLD_DATABASE_URL, else the SQLite
file ./leasehold.db. Accepted forms: postgres://… or postgresql://… URLs,
sqlite:PATH, file:PATH, or a plain file path.

Exit codes: 0 ok, 1 runtime failure, 2 usage error, 3 not found (job id or
periodic schedule).`

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:               "leasehold",
		Short:             "Operate a leasehold job queue and run its demo",
		Long:              rootLong,
		Version:           version(),
		SilenceUsage:      true,
		SilenceErrors:     true,
		CompletionOptions: cobra.CompletionOptions{DisableDefaultCmd: true},
	}
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	pf := root.PersistentFlags()
	pf.StringVar(&a.dbFlag, "db", "", "database: postgres://… URL, sqlite:PATH or a file path (default $"+cli.EnvDatabaseURL+", else ./"+cli.DefaultPath+"; demo and chaos ignore $"+cli.EnvDatabaseURL+")")
	pf.BoolVar(&a.jsonOut, "json", false, "print JSON instead of tables")
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return cli.UsageError(fmt.Errorf("%w (see %s --help)", cli.FlagParseError(err), c.CommandPath()))
	})
	root.SetHelpCommand(helpCommand(root))
	root.AddCommand(a.migrateCommand(), a.enqueueCommand(), a.jobsCommand(), a.queuesCommand(),
		a.periodicCommand(), a.watchCommand(), a.purgeCommand(), a.workCommand(), a.serveCommand(), a.demoCommand(), a.benchCommand(), a.chaosCommand(), a.hostsCommand())
	return root
}

// helpCommand is `leasehold help [COMMAND]`: cobra's, except that an
// unknown topic is a usage error (exit code 2), as an unknown command is,
// where cobra's prints a note and exits 0.
func helpCommand(root *cobra.Command) *cobra.Command {
	return &cobra.Command{
		Use:   "help [COMMAND]",
		Short: "Help about any command",
		RunE: func(_ *cobra.Command, args []string) error {
			c, rest, err := root.Find(args)
			if err != nil || c == nil || len(rest) > 0 {
				return cli.Usagef("unknown help topic %q (see %s --help)", strings.Join(args, " "), root.CommandPath())
			}
			return c.Help()
		},
	}
}

// runE wraps a command body: it marks that a command ran.
func (a *app) runE(fn func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		a.ran = true
		return fn(cmd, args)
	}
}

// argNames checks that a command got exactly the named arguments.
func argNames(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == len(names) {
			return nil
		}
		if len(names) == 0 && cmd.HasSubCommands() {
			// "queues pasue x": a mistyped subcommand, not arguments.
			return cli.Usagef("unknown command %q for %q, which takes no arguments (see %s --help)",
				args[0], cmd.CommandPath(), cmd.CommandPath())
		}
		want := "no arguments"
		if len(names) > 0 {
			want = strings.Join(names, " ")
		}
		return cli.Usagef("%s takes %s, got %d argument(s) (see %s --help)",
			strings.TrimPrefix(cmd.CommandPath(), cmd.Root().Name()+" "), want, len(args), cmd.CommandPath())
	}
}

// getenv returns the environment variable key, "" when unset.
func (a *app) getenv(key string) string {
	v, _ := a.lookupEnv(key)
	return v
}

// target resolves the database from --db, the environment or the default.
func (a *app) target(cmd *cobra.Command) (cli.Target, error) {
	if cmd.Flags().Changed("db") {
		if strings.TrimSpace(a.dbFlag) == "" {
			return cli.Target{}, cli.Usagef("--db is empty")
		}
		return cli.ParseTarget(a.dbFlag)
	}
	env, set := a.lookupEnv(cli.EnvDatabaseURL)
	if set && strings.TrimSpace(env) == "" {
		// Set but empty is most often "$PROD_URL" with PROD_URL unset:
		// taking it as unset would open (or create) ./leasehold.db.
		return cli.Target{}, cli.Usagef("$%s is set but blank: unset it, or name a database", cli.EnvDatabaseURL)
	}
	return cli.ParseTarget(env)
}

// open opens the configured database; create allows a new SQLite file.
func (a *app) open(cmd *cobra.Command, create bool) (*cli.DB, error) {
	t, err := a.target(cmd)
	if err != nil {
		return nil, err
	}
	return cli.Open(cmd.Context(), t, cli.OpenOptions{Create: create})
}

// logger writes the library's warnings on stderr.
func (a *app) logger(level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(a.stderr, &slog.HandlerOptions{Level: level}))
}

// operator returns a client without workers for operator commands, with
// the queue policies its stuck watcher applies (nil: requeue every
// expired lease).
func (a *app) operator(db *cli.DB, queues map[string]leasehold.QueueConfig) (*leasehold.Client, error) {
	c, err := leasehold.NewClient(leasehold.Config{Driver: db.Driver, Queues: queues, Logger: a.logger(slog.LevelWarn)})
	if errors.Is(err, leasehold.ErrInvalidConfig) {
		return nil, cli.UsageError(err)
	}
	if err != nil {
		return nil, fmt.Errorf("client: %w", err)
	}
	return c, nil
}

// withClient opens the database and runs fn with an operator client.
func (a *app) withClient(cmd *cobra.Command, fn func(ctx context.Context, c *leasehold.Client) error) error {
	return a.withDB(cmd, func(_ *cli.DB, c *leasehold.Client) error { return fn(cmd.Context(), c) })
}

// withOperator runs query with an operator client, then reads the database
// clock and passes it to the printer query returned. The clock is read after
// the query, never before: a lease renewed while the query ran then never
// shows more time left than its TTL. The clock only serves the display, and
// query may have committed a write (an enqueue, a retry, a cancel): a failed
// read of it must not fail the command, or a script retrying the command
// would repeat the write (a second job). The printer then gets the local
// clock, and a warning on stderr says so.
func (a *app) withOperator(cmd *cobra.Command, query func(ctx context.Context, c *leasehold.Client) (func(now time.Time) error, error)) error {
	return a.withDB(cmd, func(db *cli.DB, c *leasehold.Client) error {
		ctx := cmd.Context()
		show, err := query(ctx, c)
		if err != nil {
			return err
		}
		now, err := db.Driver.Now(ctx)
		if err != nil {
			now = time.Now()
			if _, werr := fmt.Fprintf(a.stderr, "leasehold: warning: read database clock: %v; times below are by this machine's clock\n", err); werr != nil {
				return fmt.Errorf("write: %w", werr)
			}
		}
		return show(now)
	})
}

// withDB opens the database, checks that its schema is the version this
// tool knows (cli.DB.CheckSchema), and runs fn with it and an operator
// client.
func (a *app) withDB(cmd *cobra.Command, fn func(db *cli.DB, c *leasehold.Client) error) error {
	return a.withPolicyDB(cmd, nil, fn)
}

// withPolicyDB is withDB with a client whose stuck watcher applies the
// queue policies of queues (see operator).
func (a *app) withPolicyDB(cmd *cobra.Command, queues map[string]leasehold.QueueConfig, fn func(db *cli.DB, c *leasehold.Client) error) error {
	db, err := a.open(cmd, false)
	if err != nil {
		return err
	}
	defer db.Close()
	if err := db.CheckSchema(cmd.Context()); err != nil {
		return err
	}
	c, err := a.operator(db, queues)
	if err != nil {
		return err
	}
	return fn(db, c)
}

// print writes v as JSON with --json, and calls text otherwise.
func (a *app) print(v any, text func(w io.Writer) error) error {
	if a.jsonOut {
		return cli.WriteJSON(a.stdout, v)
	}
	return text(a.stdout)
}

// errDemoFailed ends a demo whose checks failed (the summary says which).
var errDemoFailed = errors.New("demo: a payment was lost or charged twice (see the summary)")

// isTerminal reports whether w is a terminal (for redrawn progress).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
