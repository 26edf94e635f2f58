// Command leasehold operates a leasehold job queue and runs its demo: see
// `leasehold --help` and the README's "Command-line tool" section.
//
// Exit codes: 0 success, 1 runtime failure, 2 usage error (bad flag,
// argument, JSON, duration or status), 3 unknown job id or periodic
// schedule.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes the command line args and returns the exit code. Errors
// are printed on stderr as one line.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		if v := recover(); v != nil {
			fmt.Fprintf(stderr, "leasehold: internal error: %v\n", v)
			code = cli.ExitFailure
		}
	}()
	a := &app{stdin: os.Stdin, stdout: stdout, stderr: stderr, getenv: os.Getenv}
	root := a.rootCommand()
	root.SetArgs(args)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return cli.ExitOK
	}
	if !a.ran {
		// cobra rejected the command line before any command ran: point at
		// the help of the command it chose (the root's for an unknown one).
		if !strings.Contains(err.Error(), "--help") {
			err = fmt.Errorf("%w (see %s --help)", err, cmd.CommandPath())
		}
		err = cli.UsageError(err)
	}
	fmt.Fprintln(stderr, cli.Message(err))
	return cli.ExitCode(err)
}
