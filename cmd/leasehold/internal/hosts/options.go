package hosts

import (
	"cmp"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"time"

	"github.com/leasehold/leasehold/internal/netns"
)

// Defaults of Options.
const (
	DefaultJobs        = 100_000
	DefaultConcurrency = 50
	DefaultPort        = 5432
	DefaultStepTimeout = 5 * time.Minute
	// DefaultCeilingLoops is more than the bench's default: the sweep's
	// largest steps hold many more sessions than two.
	DefaultCeilingLoops = 4
	// reportEvery is how often the workers write their counters.
	reportEvery = 500 * time.Millisecond
	// MaxProcs bounds a process count of the sweep.
	MaxProcs = 64
)

// DefaultProcs are the process counts of the sweep.
var DefaultProcs = []int{1, 2, 4, 8, 16}

// Options configure a run; zero fields take the defaults.
type Options struct {
	// Executable is the leasehold binary the workers run.
	Executable string
	// Network names the namespaces, the bridge and the subnet (netns
	// defaults: three hosts on 10.213.0.0/24).
	Network netns.Config
	// Jobs is the number of no-op jobs each step drains.
	Jobs int
	// Procs are the process counts of the sweep, in run order.
	Procs []int
	// Concurrency is each worker's slots (`leasehold work --concurrency`).
	Concurrency int
	// Port is the port of the run's PostgreSQL server. Its socket is in
	// its own directory, and it listens on the bridge address only, so
	// the default clashes with no other server.
	Port int
	// NoCeiling skips the bare-SQL ceiling.
	NoCeiling bool
	// CeilingLoops is the ceiling's number of concurrent bare-SQL loops.
	CeilingLoops int
	// StepTimeout bounds one step.
	StepTimeout time.Duration
	// Progress receives a line per step; nil discards them.
	Progress io.Writer
}

func (o Options) withDefaults() Options {
	o.Jobs = cmp.Or(o.Jobs, DefaultJobs)
	if len(o.Procs) == 0 {
		o.Procs = DefaultProcs
	}
	o.Concurrency = cmp.Or(o.Concurrency, DefaultConcurrency)
	o.Port = cmp.Or(o.Port, DefaultPort)
	o.StepTimeout = cmp.Or(o.StepTimeout, DefaultStepTimeout)
	o.CeilingLoops = cmp.Or(o.CeilingLoops, DefaultCeilingLoops)
	if o.Progress == nil {
		o.Progress = io.Discard
	}
	if o.Network.Hosts == 0 {
		o.Network.Hosts = netns.DefaultHosts
	}
	if !o.Network.Subnet.IsValid() {
		o.Network.Subnet = netns.DefaultSubnet
	}
	return o
}

func (o Options) validate() error {
	if o.Executable == "" {
		return fmt.Errorf("hosts: no worker executable")
	}
	if o.Jobs < 1 || o.Concurrency < 1 || o.CeilingLoops < 1 || o.Port < 1 || o.Port > 65535 {
		return fmt.Errorf("hosts: jobs, concurrency, ceiling loops and port must be positive (port at most 65535)")
	}
	if slices.ContainsFunc(o.Procs, func(p int) bool { return p < 1 || p > MaxProcs }) {
		return fmt.Errorf("hosts: process counts %v: want 1 to %d", o.Procs, MaxProcs)
	}
	return nil
}

// hbaLine lets the subnet's hosts in without a password.
func hbaLine(subnet netip.Prefix) string {
	return "host all all " + subnet.Masked().String() + " trust"
}
