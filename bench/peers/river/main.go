// Command river drains no-op jobs with River (github.com/riverqueue/river)
// on PostgreSQL, for scripts/peerbench: the same work as leasehold's drain
// benchmark, done by a peer, on the same server.
//
// It runs one of three steps, each its own process so that the caller can
// read the server's counters between them:
//
//	river -db URL -schema S -jobs N prepare   # create S, migrate, insert N jobs
//	river -db URL -schema S -jobs N drain     # time a client draining them
//	river -db URL -schema S drop              # drop S
//
// drain prints one JSON line: the jobs, the seconds from the client's
// start to the last completion written, jobs/s, and River's settings.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "river:", err)
		os.Exit(1)
	}
}

// options are the command line.
type options struct {
	url    string
	schema string
	jobs   int
	tuning tuning
}

func run(ctx context.Context, args []string) error {
	var o options
	fs := flag.NewFlagSet("river", flag.ContinueOnError)
	fs.StringVar(&o.url, "db", "", "PostgreSQL URL")
	fs.StringVar(&o.schema, "schema", "peerbench_river", "scratch schema for River's tables")
	fs.IntVar(&o.jobs, "jobs", 100_000, "jobs to insert or drain")
	o.tuning.flags(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if o.url == "" || fs.NArg() != 1 {
		return fmt.Errorf("usage: river -db URL [-schema S] [-jobs N] prepare|drain|drop")
	}
	if o.jobs < 1 {
		return fmt.Errorf("-jobs %d must be positive", o.jobs)
	}
	switch fs.Arg(0) {
	case "prepare":
		return prepare(ctx, o)
	case "drain":
		return drain(ctx, o)
	case "drop":
		return drop(ctx, o)
	}
	return fmt.Errorf("unknown step %q (want prepare, drain or drop)", fs.Arg(0))
}
