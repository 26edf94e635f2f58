package view

import (
	"time"

	"github.com/leasehold/leasehold"
)

// PeriodicView is one schedule of periodic jobs as the database records
// it.
type PeriodicView struct {
	Name  string `json:"name"`
	Spec  string `json:"spec"`
	Kind  string `json:"kind"`
	Queue string `json:"queue"`
	// LastSlot is the latest slot enqueued, absent when none was yet;
	// LastJobID is its job, absent when none was inserted.
	LastSlot  *time.Time `json:"last_slot,omitempty"`
	LastJobID int64      `json:"last_job_id,omitempty"`
	// NextSlot is the slot after it, absent when the schedule never
	// fires again.
	NextSlot *time.Time `json:"next_slot,omitempty"`
	// Overdue is set when NextSlot is older than the schedule's grace
	// period (the default, leasehold.DefaultPeriodicGrace, when none is
	// recorded): no process enqueued it, probably because none runs the
	// schedule any more.
	Overdue   bool      `json:"overdue"`
	UpdatedAt time.Time `json:"updated_at"`
}

// NewPeriodicView returns the view of a schedule; now is the database
// clock.
func NewPeriodicView(r *leasehold.PeriodicRow, now time.Time) PeriodicView {
	return PeriodicView{
		Name: r.Name, Spec: r.Spec, Kind: r.Kind, Queue: r.Queue,
		LastSlot: timePtr(r.LastSlot), LastJobID: r.LastJobID, NextSlot: timePtr(r.NextSlot),
		Overdue:   Overdue(r, now),
		UpdatedAt: r.UpdatedAt.UTC(),
	}
}

// Overdue reports whether r's next slot passed longer ago than its grace
// period: the one recorded with the schedule, else the default.
func Overdue(r *leasehold.PeriodicRow, now time.Time) bool {
	grace := r.Grace
	if grace <= 0 {
		grace = leasehold.DefaultPeriodicGrace
	}
	return !r.NextSlot.IsZero() && now.Sub(r.NextSlot) > grace
}
