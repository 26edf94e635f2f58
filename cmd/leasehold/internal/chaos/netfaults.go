package chaos

import (
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/fleet"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/netfault"
)

// Kinds of network fault, between the proxied workers and the database.
const (
	outagePartition = "net_partition" // the proxy cuts: connections closed, new ones refused
	outageDelay     = "net_delay"     // every reply held for NetDelay
	outageStall     = "net_stall"     // nothing forwarded; held bytes arrive when it ends
)

// netKinds maps the names of --net-faults to outage kinds.
var netKinds = map[string]string{"partition": outagePartition, "delay": outageDelay, "stall": outageStall}

// parseNetFaults turns "partition,delay,stall" into outage kinds.
func parseNetFaults(s string) ([]string, error) {
	var kinds []string
	for _, name := range strings.Split(s, ",") {
		k, ok := netKinds[strings.TrimSpace(name)]
		if !ok {
			return nil, cli.Usagef("--net-faults: unknown fault %q (want partition, delay or stall)", name)
		}
		kinds = append(kinds, k)
	}
	return kinds, nil
}

// isNetFault reports whether an outage kind is a network fault.
func isNetFault(kind string) bool {
	return kind == outagePartition || kind == outageDelay || kind == outageStall
}

// netState is the proxy and its faults.
type netState struct {
	proxy  *netfault.Proxy
	kinds  []string
	next   int
	owners map[string]bool // every owner that connected through the proxy
	active *outage
	timer  *time.Timer
}

// startProxy puts a proxy in front of the run's database (on loopback).
func (h *harness) startProxy() error {
	kinds, err := parseNetFaults(h.o.NetFaults)
	if err != nil {
		return err
	}
	dial, addr, err := netfault.PostgresUpstream(h.ns.target.URL)
	if err != nil {
		return err
	}
	p, err := netfault.Listen("127.0.0.1:0", dial)
	if err != nil {
		return err
	}
	h.net = &netState{proxy: p, kinds: kinds, next: h.rng.IntN(len(kinds)), owners: map[string]bool{}}
	h.logf("TCP proxy %s -> %s for %d of %d workers (faults: %s)", p.Addr(), addr, h.o.NetWorkers, h.o.Workers, h.o.NetFaults)
	return nil
}

// proxiedURL is the URL of a worker that connects through the proxy.
func (h *harness) proxiedURL(owner string) string {
	u, _ := url.Parse(h.ns.workerURL(owner)) // parsed in newNamespace
	q := u.Query()
	q.Set("host", "127.0.0.1")
	q.Set("port", strconv.Itoa(h.net.proxy.Addr().Port))
	u.RawQuery = q.Encode()
	h.net.owners[owner] = true
	return u.String()
}

// proxied returns the running processes that connect through the proxy.
func (h *harness) proxied() []*fleet.Proc {
	var ps []*fleet.Proc
	for _, p := range h.current() {
		if h.net.owners[p.Owner()] {
			ps = append(ps, p)
		}
	}
	return ps
}

// netTimerC is the channel of the active network fault's end, or nil.
func (h *harness) netTimerC() <-chan time.Time {
	if h.net == nil || h.net.timer == nil {
		return nil
	}
	return h.net.timer.C
}

// startNetFault injects the next network fault for NetFaultFor.
func (h *harness) startNetFault() {
	n := h.net
	if n == nil || n.active != nil || h.quiet() {
		return
	}
	kind := n.kinds[n.next%len(n.kinds)]
	n.next++
	procs := h.proxied()
	o := h.newOutage(kind, procs)
	o.Severed = -n.proxy.Stats().Severed // completed at the end
	switch kind {
	case outagePartition:
		n.proxy.Cut()
	case outageDelay:
		n.proxy.Delay(h.o.NetDelay)
		o.Delay = h.o.NetDelay
	case outageStall:
		n.proxy.Stall()
	}
	n.active, n.timer = o, time.NewTimer(h.o.NetFaultFor)
	h.sched.outages = append(h.sched.outages, o)
	h.logf("%s for %s between %d workers and the database (lease TTL %s)%s", netDescription(kind, h.o.NetDelay),
		cli.FormatDuration(h.o.NetFaultFor), len(procs), cli.FormatDuration(h.o.TTL), names(procs))
}

// endNetFault lets traffic pass again.
func (h *harness) endNetFault() {
	n := h.net
	o := n.active
	n.proxy.Pass()
	o.end = time.Now()
	o.Took = o.end.Sub(o.start)
	o.Severed += n.proxy.Stats().Severed
	n.active, n.timer = nil, nil
	h.logf("%s over after %s: traffic passes again", netDescription(o.Kind, o.Delay), cli.FormatDuration(o.Took))
}

func netDescription(kind string, delay time.Duration) string {
	switch kind {
	case outagePartition:
		return "network partition (proxy cuts every connection, refuses new ones)"
	case outageDelay:
		return "delayed replies (" + cli.FormatDuration(delay) + " each)"
	default:
		return "stalled traffic (bytes accepted, nothing forwarded)"
	}
}

func names(ps []*fleet.Proc) string {
	if len(ps) == 0 {
		return ""
	}
	s := make([]string, len(ps))
	for i, p := range ps {
		s[i] = p.Name()
	}
	return ": " + strings.Join(s, ", ")
}

// netRefusalWindow is how long after a network fault a refused completion
// of a proxied worker is still counted as the fault's (unless the next
// fault starts first): the late write arrives when traffic passes again.
func (h *harness) netRefusalWindow() time.Duration { return h.o.TTL + 5*time.Second }

// netOutages returns the network faults that ended, in start order.
func (h *harness) netOutages() []*outage {
	var os []*outage
	for _, o := range h.sched.outages {
		if isNetFault(o.Kind) && !o.end.IsZero() {
			os = append(os, o)
		}
	}
	return os
}

// countNetFaults fills the report's network figures: the faults by kind
// and the refused completions of the cut-off workers each one caused.
func (h *harness) countNetFaults(r *Report, refusals []timedRefusal) {
	if h.net == nil {
		return
	}
	nf := &NetFigures{Proxy: h.net.proxy.Stats(), ProxiedWorkers: h.o.NetWorkers}
	os := h.netOutages()
	for i, o := range os {
		k := NetKindFigures{Kind: o.Kind}
		until := o.end.Add(h.netRefusalWindow())
		if i+1 < len(os) && os[i+1].start.Before(until) {
			until = os[i+1].start
		}
		for _, rf := range refusals {
			if h.net.owners[rf.Owner] && !rf.at.Before(o.start) && rf.at.Before(until) {
				o.Refusals++
			}
		}
		k.Faults, k.Refusals, k.Severed = 1, o.Refusals, o.Severed
		nf.add(k)
	}
	r.Net = nf
}
