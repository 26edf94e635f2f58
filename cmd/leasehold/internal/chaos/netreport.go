package chaos

import (
	"fmt"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/netfault"
)

// NetFigures describe the network faults between the proxied workers and
// the database.
type NetFigures struct {
	ProxiedWorkers int              `json:"proxied_workers"`
	Proxy          netfault.Stats   `json:"proxy"`
	Kinds          []NetKindFigures `json:"kinds"`
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
	p := n.Proxy
	t.Row("proxy", fmt.Sprintf("%d workers", n.ProxiedWorkers), fmt.Sprintf("%d connections accepted, %d refused, %d severed; %d bytes up, %d down",
		p.Accepted, p.Refused, p.Severed, p.Up, p.Down))
}
