package chaos

import (
	"fmt"
	"strings"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/netfault"
)

// NetFigures describe the network faults between the proxied workers and
// the database.
type NetFigures struct {
	// Mode is where the proxy ran: NetModeNamespaces or NetModeLoopback.
	Mode string `json:"mode"`
	// ProxyAddr is the proxy's address, Upstream the server's it
	// forwarded to.
	ProxyAddr string `json:"proxy_addr"`
	Upstream  string `json:"upstream"`
	// ProxyNamespace and WorkerNamespace (namespace mode) name the
	// namespaces of the proxy and of the proxied workers; WorkerAddr is
	// the latter's address.
	ProxyNamespace  string           `json:"proxy_namespace,omitempty"`
	WorkerNamespace string           `json:"worker_namespace,omitempty"`
	WorkerAddr      string           `json:"worker_addr,omitempty"`
	ProxiedWorkers  int              `json:"proxied_workers"`
	Proxy           netfault.Stats   `json:"proxy"`
	Kinds           []NetKindFigures `json:"kinds"`
	// Sessions are the checks of where the workers' sessions came from,
	// at the start and at the end (namespace mode).
	Sessions []SessionCheck `json:"sessions,omitempty"`
}

// where says where the proxy and the workers behind it ran.
func (n *NetFigures) where() string {
	if n.Mode != NetModeNamespaces {
		return fmt.Sprintf("proxy on loopback %s -> %s", n.ProxyAddr, n.Upstream)
	}
	return fmt.Sprintf("proxy in namespace %s at %s -> %s; %d proxied workers in namespace %s (%s)",
		n.ProxyNamespace, n.ProxyAddr, n.Upstream, n.ProxiedWorkers, n.WorkerNamespace, n.WorkerAddr)
}

// sessionsOK reports whether both checks of the sessions were made and
// held.
func (n *NetFigures) sessionsOK() bool {
	if len(n.Sessions) != 2 {
		return false
	}
	for _, c := range n.Sessions {
		if !c.OK() {
			return false
		}
	}
	return true
}

func (n *NetFigures) sessionsSummary() string {
	host, _, _ := strings.Cut(n.ProxyAddr, ":")
	var parts []string
	for _, c := range n.Sessions {
		parts = append(parts, c.At+": "+c.summary(host))
	}
	if len(parts) == 0 {
		return "no check of the sessions was made"
	}
	return strings.Join(parts, "; ")
}

// describeNet fills in where the proxy ran.
func (h *harness) describeNet(n *NetFigures) {
	n.Mode, n.ProxyAddr, n.Sessions = h.o.NetMode, h.net.addr, h.net.sessions
	if h.hosts == nil {
		_, n.Upstream, _ = netfault.PostgresUpstream(h.ns.target.URL)
		return
	}
	n.Upstream = h.hosts.serverAddr
	n.ProxyNamespace, n.WorkerNamespace = h.hosts.proxy.Name, h.hosts.workers.Name
	n.WorkerAddr = h.hosts.workers.Addr.String()
}

// NetKindFigures count the faults of one kind and what they caused.
type NetKindFigures struct {
	Kind   string `json:"kind"`
	Faults int    `json:"faults"`
	// Refusals counts completions of the cut-off workers the fence
	// refused during the faults or within TTL + 5s after each.
	Refusals int `json:"refusals"`
	// Severed counts the connections the partitions closed.
	Severed int64 `json:"severed"`
}

func (n *NetFigures) add(k NetKindFigures) {
	for i := range n.Kinds {
		if n.Kinds[i].Kind == k.Kind {
			n.Kinds[i].Faults += k.Faults
			n.Kinds[i].Refusals += k.Refusals
			n.Kinds[i].Severed += k.Severed
			return
		}
	}
	n.Kinds = append(n.Kinds, k)
}

// total sums the kinds (zero without network faults).
func (n *NetFigures) total() NetKindFigures {
	var t NetKindFigures
	if n == nil {
		return t
	}
	for _, k := range n.Kinds {
		t.Faults, t.Refusals, t.Severed = t.Faults+k.Faults, t.Refusals+k.Refusals, t.Severed+k.Severed
	}
	return t
}

// printNet adds the network rows to the report's table.
func (r *Report) printNet(t *cli.Table) {
	n := r.Net
	if n == nil {
		return
	}
	for _, k := range n.Kinds {
		t.Row(k.Kind, fmt.Sprintf("%d faults", k.Faults), fmt.Sprintf("%d completions refused by the fence after them; %d connections severed", k.Refusals, k.Severed))
	}
	for _, o := range r.Faults.Outages {
		if isNetFault(o.Kind) {
			t.Row("  "+o.Kind, fmt.Sprintf("%.2fs", o.Took.Seconds()), fmt.Sprintf("at %.1fs; %d/%d workers back on their own within %.2fs, %d failed calls, %d refusals",
				o.At.Seconds(), o.Recovered, o.Workers, o.RecoveredIn.Seconds(), o.Errors, o.Refusals))
		}
	}
	for _, c := range n.Sessions {
		verdict := "ok"
		if !c.OK() {
			verdict = "WRONG"
		}
		t.Row("  sessions at "+c.At, verdict, fmt.Sprintf("%d proxied workers: %d sessions; %d direct workers: %d sessions from %s",
			c.ProxiedWorkers, c.ProxiedSessions, c.DirectWorkers, c.DirectSessions, strings.Join(c.DirectFrom, ", ")))
	}
	p := n.Proxy
	t.Row("proxy", fmt.Sprintf("%d workers", n.ProxiedWorkers), fmt.Sprintf("%d connections accepted, %d refused, %d severed; %d bytes up, %d down",
		p.Accepted, p.Refused, p.Severed, p.Up, p.Down))
}
