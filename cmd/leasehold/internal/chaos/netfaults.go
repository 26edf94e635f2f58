package chaos

import (
	"context"
	"net"
	"net/url"
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

// netModes maps outage kinds to the proxy's modes.
var netModes = map[string]netfault.Mode{outagePartition: netfault.Cut, outageDelay: netfault.Delay, outageStall: netfault.Stall}

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
	proxy  netfault.Switch
	addr   string // where the proxied workers connect (host:port)
	kinds  []string
	next   int
	owners map[string]bool // every owner that connected through the proxy
	active *outage
	timer  *time.Timer
	// sessions are the checks of where the workers' sessions come from
	// (namespace mode).
	sessions []SessionCheck
}

// netCallTimeout bounds one call to the proxy (a process of its own in
// namespace mode).
const netCallTimeout = 5 * time.Second

// startProxy puts a proxy in front of the run's database: a process in
// the proxy host in namespace mode, else one of the harness's own on
// loopback.
func (h *harness) startProxy(ctx context.Context) error {
	kinds, err := parseNetFaults(h.o.NetFaults)
	if err != nil {
		return err
	}
	var (
		sw        netfault.Switch
		addr, dst string
	)
	if h.hosts != nil {
		sw, addr, err = h.startProxyProcess(ctx)
		dst = h.hosts.serverAddr
	} else {
		sw, addr, dst, err = startLoopbackProxy(h.ns.target.URL)
	}
	if err != nil {
		return err
	}
	h.net = &netState{proxy: sw, addr: addr, kinds: kinds, next: h.rng.IntN(len(kinds)), owners: map[string]bool{}}
	h.logf("TCP proxy %s (%s) -> %s for %d of %d workers (faults: %s)", addr, netModeDescription(h.o.NetMode), dst,
		h.o.NetWorkers, h.o.Workers, h.o.NetFaults)
	return nil
}

// startLoopbackProxy starts a proxy of this process on loopback, in front
// of the first host of rawURL.
func startLoopbackProxy(rawURL string) (netfault.Switch, string, string, error) {
	dial, dst, err := netfault.PostgresUpstream(rawURL)
	if err != nil {
		return nil, "", "", err
	}
	p, err := netfault.Listen("127.0.0.1:0", dial)
	if err != nil {
		return nil, "", "", err
	}
	return netfault.Local(p), p.Addr().String(), dst, nil
}

// proxiedURL is the URL of a worker that connects through the proxy.
func (h *harness) proxiedURL(owner string) string {
	u, _ := url.Parse(h.ns.workerURL(owner)) // parsed in newNamespace
	host, port, _ := net.SplitHostPort(h.net.addr)
	q := u.Query()
	q.Set("host", host)
	q.Set("port", port)
	u.Host = ""
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
func (h *harness) startNetFault(ctx context.Context) {
	n := h.net
	if n == nil || n.active != nil || h.quiet() {
		return
	}
	kind := n.kinds[n.next%len(n.kinds)]
	n.next++
	procs := h.proxied()
	o := h.newOutage(kind, procs)
	before, err := h.netStats(ctx)
	o.Severed = -before.Severed // completed at the end
	mode := netModes[kind]
	if kind == outageDelay {
		o.Delay = h.o.NetDelay
	}
	if err == nil {
		_, err = h.applyNet(ctx, mode, o.Delay)
	}
	if err != nil {
		o.Error = err.Error()
		h.logf("the proxy did not take the %s: %v", kind, err)
	}
	n.active, n.timer = o, time.NewTimer(h.o.NetFaultFor)
	h.sched.outages = append(h.sched.outages, o)
	h.logf("%s for %s between %d workers and the database (lease TTL %s)%s", netDescription(kind, h.o.NetDelay),
		cli.FormatDuration(h.o.NetFaultFor), len(procs), cli.FormatDuration(h.o.TTL), names(procs))
}

// endNetFault lets traffic pass again.
func (h *harness) endNetFault(ctx context.Context) {
	n := h.net
	o := n.active
	after, err := h.applyNet(ctx, netfault.Pass, 0)
	if err != nil && o.Error == "" {
		o.Error = err.Error()
		h.logf("the proxy did not end the %s: %v", o.Kind, err)
	}
	o.end = time.Now()
	o.Took = o.end.Sub(o.start)
	o.Severed += after.Severed
	n.active, n.timer = nil, nil
	h.logf("%s over after %s: traffic passes again", netDescription(o.Kind, o.Delay), cli.FormatDuration(o.Took))
}

// applyNet switches the proxy to m within netCallTimeout.
func (h *harness) applyNet(ctx context.Context, m netfault.Mode, d time.Duration) (netfault.Stats, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), netCallTimeout)
	defer cancel()
	return h.net.proxy.Apply(ctx, m, d)
}

// netStats reads the proxy's counters within netCallTimeout.
func (h *harness) netStats(ctx context.Context) (netfault.Stats, error) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), netCallTimeout)
	defer cancel()
	return h.net.proxy.Stats(ctx)
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
	stats, _ := h.netStats(context.Background()) // zero if the proxy is gone
	nf := &NetFigures{Proxy: stats, ProxiedWorkers: h.o.NetWorkers}
	h.describeNet(nf)
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
