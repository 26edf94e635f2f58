package main

import (
	"errors"
	"fmt"
	"net/netip"
	"os"

	"github.com/spf13/cobra"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/hosts"
	"github.com/leasehold/leasehold/internal/netns"
)

const hostsLong = `Measure throughput with worker processes on several "hosts" of this machine:
Linux network namespaces (leasehold-h1, leasehold-h2, ...), each with its own
address on a private /24 and a veth link to a bridge in the root namespace.
The command starts a PostgreSQL server of its own (initdb and pg_ctl, found on
the PATH or in /usr/lib/postgresql/*/bin; as root they run as the postgres
user) listening on the bridge address, with the subnet let in by pg_hba.conf.
It ignores --db.

For each --procs count it inserts --jobs no-op jobs into a paused queue, starts
that many ` + "`leasehold work`" + ` processes spread round-robin over the namespaces
(each connects to the server over its veth link; the command checks that every
session comes from its namespace's address), resumes the queue and times the
drain by the database clock. Then it checks that every job was completed
exactly once: one attempt per job in the history, completed, and as many
handler runs and claims across the workers as jobs. The bare-SQL ceiling of
the same server (the bench's ceiling phase) is measured before the first step
and after each, and each step is compared with the mean of the two around it.
The "x first step" column is each step's rate over the first step's. Exit
code 1 when a job was lost or done twice, or when the sweep stopped before
its end (the table and --out then say INCOMPLETE, with the error).

Needs root and iproute2 (ip netns). Leftovers of an interrupted run (namespaces,
links, processes in them, and its PostgreSQL server, kept in
$TMPDIR/leasehold-hosts-BRIDGE-PORT) are removed at the start and at the end.
Only what leasehold made is removed: a bridge, link or namespace of the same
name made by something else is left alone, and the command refuses to start
(choose another --bridge or --prefix).`

type hostsFlags struct {
	o         hosts.Options
	subnet    string
	jsonPath  string
	chartPath string
}

func (a *app) hostsCommand() *cobra.Command {
	var f hostsFlags
	cmd := &cobra.Command{
		Use:     "hosts",
		Short:   "Measure throughput with worker processes spread over network namespaces (needs root)",
		Long:    hostsLong,
		Example: `  sudo leasehold hosts --port 5443 --chart hosts.png --out hosts.json`,
		Args:    argNames(),
		RunE:    a.runE(func(cmd *cobra.Command, _ []string) error { return a.hosts(cmd, &f) }),
	}
	fl := cmd.Flags()
	fl.IntVar(&f.o.Jobs, "jobs", hosts.DefaultJobs, "no-op jobs drained per step")
	fl.IntSliceVar(&f.o.Procs, "procs", hosts.DefaultProcs, "worker process counts of the sweep")
	fl.IntVar(&f.o.Network.Hosts, "hosts", netns.DefaultHosts, "network namespaces")
	fl.IntVar(&f.o.Concurrency, "concurrency", hosts.DefaultConcurrency, "slots of each worker process (work --concurrency)")
	fl.IntVar(&f.o.Port, "port", hosts.DefaultPort, "port of the command's PostgreSQL server (on the bridge address)")
	fl.StringVar(&f.subnet, "subnet", netns.DefaultSubnet.String(), "private /24 of the namespaces (the bridge takes .1)")
	fl.StringVar(&f.o.Network.Prefix, "prefix", netns.DefaultPrefix, "namespace names: PREFIX1, PREFIX2, ...")
	fl.StringVar(&f.o.Network.Bridge, "bridge", netns.DefaultBridge, "bridge name (veths: BRIDGE-1, ...)")
	fl.BoolVar(&f.o.NoCeiling, "no-ceiling", false, "do not measure the bare-SQL ceiling")
	fl.IntVar(&f.o.CeilingLoops, "ceiling-loops", hosts.DefaultCeilingLoops, "concurrent bare-SQL loops of the ceiling")
	fl.StringVar(&f.jsonPath, "out", "", "write the figures as JSON to this file")
	fl.StringVar(&f.chartPath, "chart", "", "draw jobs/s against worker processes as a PNG in this file")
	return cmd
}

func (a *app) hosts(cmd *cobra.Command, f *hostsFlags) error {
	if err := cli.PositiveInts(cmd.Flags(), "jobs", "hosts", "concurrency", "ceiling-loops"); err != nil {
		return err
	}
	if f.o.Port < 1 || f.o.Port > 65535 {
		return cli.Usagef("--port %d: want a port from 1 to 65535", f.o.Port)
	}
	for _, p := range f.o.Procs {
		if p < 1 || p > hosts.MaxProcs {
			return cli.Usagef("--procs %d: want process counts from 1 to %d", p, hosts.MaxProcs)
		}
	}
	subnet, err := netip.ParsePrefix(f.subnet)
	if err != nil {
		return cli.Usagef("--subnet %q: %v", f.subnet, err)
	}
	f.o.Network.Subnet = subnet
	if err := netns.Available(cmd.Context()); err != nil {
		return cli.Failf("%w", err)
	}
	exe, err := os.Executable()
	if err != nil {
		return cli.Failf("find the leasehold executable for the workers: %w", err)
	}
	f.o.Executable, f.o.Progress = exe, a.stderr
	rep, runErr := hosts.Run(cmd.Context(), f.o)
	if rep == nil {
		return cli.Failf("%w", runErr)
	}
	if err := a.hostsReport(rep, f); err != nil || runErr != nil {
		return cli.Failf("%w", errors.Join(runErr, err))
	}
	if !rep.OK() {
		// Not only a lost or doubled job: a sweep with no step is no
		// proof of exactly once either.
		return cli.Failf("hosts: %s", rep.Verdict())
	}
	return nil
}

// hostsReport writes the report where the flags say.
func (a *app) hostsReport(rep *hosts.Report, f *hostsFlags) error {
	if f.jsonPath != "" {
		if err := writeJSONFile(f.jsonPath, rep); err != nil {
			return err
		}
	}
	if f.chartPath != "" && len(rep.Steps) > 0 {
		if err := hosts.WriteChart(f.chartPath, rep); err != nil {
			return cli.Failf("%w", err)
		}
	}
	if a.jsonOut {
		return cli.WriteJSON(a.stdout, rep)
	}
	if err := rep.Print(a.stdout); err != nil {
		return fmt.Errorf("print: %w", err)
	}
	return nil
}

// writeJSONFile writes v as indented JSON to path.
func writeJSONFile(path string, v any) error {
	f, err := os.Create(path)
	if err != nil {
		return cli.Failf("%w", err)
	}
	if err := cli.WriteJSON(f, v); err != nil {
		_ = f.Close()
		return cli.Failf("%w", err)
	}
	if err := f.Close(); err != nil {
		return cli.Failf("%w", err)
	}
	return nil
}
