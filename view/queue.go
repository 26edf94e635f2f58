package view

import (
	"slices"
	"time"

	"github.com/leasehold/leasehold"
)

// QueueView summarises one queue.
type QueueView struct {
	Queue string `json:"queue"`
	// Counts has an entry for every job state, zero or not.
	Counts               map[string]int64 `json:"counts"`
	OldestPendingSeconds float64          `json:"oldest_pending_seconds"`
	LiveLeases           int64            `json:"live_leases"`
	ExpiredLeases        int64            `json:"expired_leases"`
	// Paused is set while no worker claims the queue's jobs; PausedAt is
	// when it was paused (database clock), absent when it is not.
	Paused   bool       `json:"paused"`
	PausedAt *time.Time `json:"paused_at,omitempty"`
	// NeverClaimed lists, per kind, the due jobs no worker ever claimed;
	// empty, never null, when there are none.
	NeverClaimed []KindBacklogView `json:"never_claimed"`
	// Estimated lists the states whose count is the database's estimate
	// (ActiveQueueStats beyond its count limit); absent when every count
	// is exact.
	Estimated []string `json:"estimated,omitempty"`
}

// IsEstimated reports whether the count of state s is an estimate.
func (v QueueView) IsEstimated(s string) bool { return slices.Contains(v.Estimated, s) }

// KindBacklogView is the never-claimed due work of one kind in a queue.
type KindBacklogView struct {
	Kind             string  `json:"kind"`
	Due              int64   `json:"due"`
	OldestDueSeconds float64 `json:"oldest_due_seconds"`
	LiveLeases       int64   `json:"live_leases"`
	// Suspect is set when the oldest has waited past the threshold and
	// the kind has no live lease: probably no running worker handles it
	// (see Suspect). It is never set in a paused queue, whose jobs wait
	// for the resume whatever workers run.
	Suspect bool `json:"suspect"`
}

// NewQueueView returns the view of a queue's statistics. A kind is
// suspect when its oldest never-claimed due job has waited longer than
// unclaimedAfter and it has no live lease, unless the queue is paused:
// then no worker claims its jobs, running or not.
func NewQueueView(q *leasehold.QueueStats, unclaimedAfter time.Duration) QueueView {
	v := QueueView{
		Queue: q.Queue, Counts: map[string]int64{}, OldestPendingSeconds: q.OldestPending.Seconds(),
		LiveLeases: q.LiveLeases, ExpiredLeases: q.ExpiredLeases, NeverClaimed: []KindBacklogView{},
		Paused: q.Paused, PausedAt: timePtr(q.PausedAt),
	}
	for _, s := range leasehold.AllStates {
		v.Counts[string(s)] = q.Counts[s]
	}
	for _, s := range q.Estimated {
		v.Estimated = append(v.Estimated, string(s))
	}
	for _, b := range q.NeverClaimed {
		v.NeverClaimed = append(v.NeverClaimed, KindBacklogView{
			Kind: b.Kind, Due: b.Due, OldestDueSeconds: b.OldestDue.Seconds(), LiveLeases: b.LiveLeases,
			Suspect: !q.Paused && Suspect(b, unclaimedAfter),
		})
	}
	return v
}

// Suspect reports whether the never-claimed jobs of b suggest that no
// running worker handles its kind: the oldest has been due longer than
// after, and no job of the kind holds a live lease. There is no registry
// of workers; this is what the jobs themselves show.
func Suspect(b *leasehold.KindBacklog, after time.Duration) bool {
	return b.Due > 0 && b.OldestDue >= after && b.LiveLeases == 0
}
