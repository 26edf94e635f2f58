package view_test

import (
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/view"
)

func TestPeriodicView(t *testing.T) {
	row := &leasehold.PeriodicRow{Name: "tick", Spec: "@every 1s", Kind: "sleep", Queue: "default",
		LastSlot: t0.Add(-time.Second), LastJobID: 7, NextSlot: t0, CreatedAt: t0.Add(-time.Hour), UpdatedAt: t0}
	jsonEqual(t, view.NewPeriodicView(row, t0), `{"name":"tick","spec":"@every 1s","kind":"sleep","queue":"default",
		"last_slot":"2025-03-01T11:59:59Z","last_job_id":7,"next_slot":"2025-03-01T12:00:00Z","overdue":false,
		"updated_at":"2025-03-01T12:00:00Z"}`)
	fresh := &leasehold.PeriodicRow{Name: "new", Spec: "@daily", Kind: "k", Queue: "q", UpdatedAt: t0}
	jsonEqual(t, view.NewPeriodicView(fresh, t0), `{"name":"new","spec":"@daily","kind":"k","queue":"q",
		"overdue":false,"updated_at":"2025-03-01T12:00:00Z"}`)
	for _, tt := range []struct {
		late time.Duration
		want bool
	}{{0, false}, {leasehold.DefaultPeriodicGrace, false}, {leasehold.DefaultPeriodicGrace + time.Second, true}} {
		if got := view.Overdue(row, t0.Add(tt.late)); got != tt.want {
			t.Errorf("Overdue %v after the next slot = %v, want %v", tt.late, got, tt.want)
		}
	}
	graced := *row
	graced.Grace = 10 * time.Minute
	for _, tt := range []struct {
		late time.Duration
		want bool
	}{{5 * time.Minute, false}, {10 * time.Minute, false}, {10*time.Minute + time.Second, true}} {
		if got := view.Overdue(&graced, t0.Add(tt.late)); got != tt.want {
			t.Errorf("Overdue %v after the next slot, with a grace of 10m recorded = %v, want %v", tt.late, got, tt.want)
		}
	}
}
