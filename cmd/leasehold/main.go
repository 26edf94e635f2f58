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
	"time"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
)

// stopSignals end a command gracefully: SIGINT (Ctrl-C), SIGTERM (a
// supervisor's stop) and SIGHUP (the terminal or ssh session that started
// it closed), unless the process was started with SIGHUP ignored: that
// is how nohup keeps a command running after the session ends, and
// catching SIGHUP would undo it. A second one, while the first one's
// graceful stop runs, ends the process at once (exitBySignal), also when
// the process was started with SIGINT ignored (`&` in a script ignores
// it). Call it once, before anything is caught: signal.Ignored no longer
// reports a signal the process has caught.
func stopSignals() []os.Signal {
	sigs := []os.Signal{os.Interrupt, syscall.SIGTERM}
	if !signal.Ignored(syscall.SIGHUP) {
		sigs = append(sigs, syscall.SIGHUP)
	}
	return sigs
}

func main() {
	sigs := stopSignals()
	ctx, stop := signal.NotifyContext(context.Background(), sigs...)
	go func() {
		<-ctx.Done()
		second := make(chan os.Signal, 1)
		signal.Notify(second, sigs...) // before stop: no window with the signal uncaught
		stop()
		exitBySignal(<-second)
	}()
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// exitBySignal ends the process as sig's default action would: killed by
// it, or, when the process started with sig ignored (its disposition
// then stays ignored), exit status 128 plus its number, as a shell
// reports a death by it.
func exitBySignal(sig os.Signal) {
	signal.Reset(sig)
	n, _ := sig.(syscall.Signal)
	_ = syscall.Kill(os.Getpid(), n)
	time.Sleep(time.Second) // the default action ends the process meanwhile
	os.Exit(128 + int(n))
}

// keepRunningOnBrokenPipe makes a write to a closed standard output or
// error fail with EPIPE instead of killing the process by SIGPIPE, for the
// commands that run until stopped (work, serve, watch): a log consumer
// that went away (a "| head", a tee that exited) must not cut a worker's
// graceful stop short and leave its leases to expire.
func keepRunningOnBrokenPipe() { signal.Ignore(syscall.SIGPIPE) }

// run executes the command line args and returns the exit code. Errors
// are printed on stderr as one line.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) (code int) {
	defer func() {
		if v := recover(); v != nil {
			fmt.Fprintf(stderr, "leasehold: internal error: %v\n", v)
			code = cli.ExitFailure
		}
	}()
	a := &app{stdin: os.Stdin, stdout: stdout, stderr: stderr, lookupEnv: os.LookupEnv}
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
