package driver

import (
	"maps"
	"slices"
)

// ClaimableParams selects the queues ClaimableQueues looks at.
type ClaimableParams struct {
	// Queues maps each queue to look at to whether its claims take over
	// expired leases (ClaimParams.TakeOver).
	Queues map[string]bool
	// Kinds are the kinds the claims would lease, as ClaimParams.Kinds.
	Kinds []string
	// Owner is the claiming owner, as ClaimParams.Owner: its own expired
	// leases are no work for its claims, which never take them over.
	Owner string
}

// ClaimableScanMin is the number of queues from which a driver's
// ClaimableQueues walks the queues that have pending jobs (a loose index
// scan: one index descent per distinct queue in the table) instead of
// looking up each of the given queues (one descent per queue given): a
// process serving thousands of idle queues then pays for the queues that
// have jobs, not for the ones it serves.
const ClaimableScanMin = 1000

// ClaimableScan reports whether ClaimableQueues of p walks the table's
// queues rather than looking up each of p.Queues.
func ClaimableScan(p *ClaimableParams) bool { return len(p.Queues) >= ClaimableScanMin }

// Candidate is one queue a driver's ClaimableQueues statement found: one
// with a due pending job, or (Expired) one with an expired lease that a
// claim may take over.
type Candidate struct {
	Queue   string
	Expired bool
}

// Claimable returns the queues of p that the candidates make claimable,
// sorted and without duplicates: a queue of p.Queues with a due pending
// job, or with an expired lease of another owner when its claims take
// over (the driver's statement leaves p.Owner's out). Drivers call
// it on what their statement found, which may hold queues p does not name.
func Claimable(p *ClaimableParams, found []Candidate) []string {
	set := make(map[string]struct{}, len(found))
	for _, c := range found {
		takeOver, ok := p.Queues[c.Queue]
		if ok && (!c.Expired || takeOver) {
			set[c.Queue] = struct{}{}
		}
	}
	return slices.Sorted(maps.Keys(set))
}
