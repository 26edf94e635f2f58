package view_test

import (
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/view"
)

// TestQueueViewPausedNotSuspect: the never-claimed jobs of a paused queue
// wait for the resume, not for a worker of their kind: none is suspect,
// however long it has waited. Resumed, the same backlog is.
func TestQueueViewPausedNotSuspect(t *testing.T) {
	q := &leasehold.QueueStats{Queue: "mail", Paused: true, PausedAt: time.Now().Add(-time.Hour),
		NeverClaimed: []*leasehold.KindBacklog{{Kind: "email.send", Due: 12, OldestDue: 10 * time.Minute}}}
	if v := view.NewQueueView(q, time.Minute); v.NeverClaimed[0].Suspect {
		t.Errorf("paused queue: kind %s suspect, want not", v.NeverClaimed[0].Kind)
	}
	q.Paused, q.PausedAt = false, time.Time{}
	if v := view.NewQueueView(q, time.Minute); !v.NeverClaimed[0].Suspect {
		t.Errorf("queue not paused: kind %s not suspect, want suspect", v.NeverClaimed[0].Kind)
	}
}
