package view

import (
	"sort"
	"time"

	"github.com/leasehold/leasehold"
)

// OwnerView is one worker instance (lease owner) as its leases show it:
// there is no registry of workers, so an owner is known by the processing
// jobs it holds.
type OwnerView struct {
	Owner string `json:"owner"`
	// Leases counts its processing jobs, Expired those whose lease has
	// run out (the owner is probably gone or stalled).
	Leases  int `json:"leases"`
	Expired int `json:"expired"`
	// LastHeartbeat is the latest renewal of any of its leases; nil
	// when none was renewed yet.
	LastHeartbeat *time.Time `json:"last_heartbeat,omitempty"`
	// Queues and Kinds it holds leases in, sorted.
	Queues []string `json:"queues"`
	Kinds  []string `json:"kinds"`
	// Jobs are its processing jobs, by id.
	Jobs []JobView `json:"jobs"`
}

// NewOwnerViews groups processing jobs by lease owner, most leases first
// (then by name); jobs not processing are left out. now is the database
// clock.
func NewOwnerViews(jobs []*leasehold.JobRow, now time.Time) []OwnerView {
	byOwner := map[string]*OwnerView{}
	var order []string
	for _, j := range jobs {
		if j.State != leasehold.StateProcessing || j.LeaseOwner == "" {
			continue
		}
		o := byOwner[j.LeaseOwner]
		if o == nil {
			o = &OwnerView{Owner: j.LeaseOwner, Queues: []string{}, Kinds: []string{}, Jobs: []JobView{}}
			byOwner[j.LeaseOwner] = o
			order = append(order, j.LeaseOwner)
		}
		o.add(j, now)
	}
	out := make([]OwnerView, 0, len(order))
	for _, name := range order {
		o := byOwner[name]
		sort.Strings(o.Queues)
		sort.Strings(o.Kinds)
		out = append(out, *o)
	}
	sort.SliceStable(out, func(a, b int) bool {
		if out[a].Leases != out[b].Leases {
			return out[a].Leases > out[b].Leases
		}
		return out[a].Owner < out[b].Owner
	})
	return out
}

// add counts the processing job j into o.
func (o *OwnerView) add(j *leasehold.JobRow, now time.Time) {
	v := NewJobView(j, now)
	o.Jobs = append(o.Jobs, v)
	o.Leases++
	if v.Lease != nil && v.Lease.Expired {
		o.Expired++
	}
	if hb := j.HeartbeatAt; !hb.IsZero() && (o.LastHeartbeat == nil || hb.After(*o.LastHeartbeat)) {
		o.LastHeartbeat = timePtr(hb)
	}
	o.Queues = addUnique(o.Queues, j.Queue)
	o.Kinds = addUnique(o.Kinds, j.Kind)
}

// addUnique appends s to list unless it is there.
func addUnique(list []string, s string) []string {
	for _, v := range list {
		if v == s {
			return list
		}
	}
	return append(list, s)
}
