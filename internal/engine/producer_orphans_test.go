package engine

import (
	"testing"
	"time"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/statemachine"
	"github.com/leasehold/leasehold/leasetype"
)

// TestOrphansOfALostClaimReply: of an owner's processing jobs, only those
// whose lease_until is after every one a claim reply brought, that were
// never renewed and that the client does not hold came from a lost reply.
func TestOrphansOfALostClaimReply(t *testing.T) {
	seen := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	row := func(id int64, until time.Time, renewed bool) *leasetype.JobRow {
		r := &leasetype.JobRow{ID: id, Attempt: 1, State: leasetype.StateProcessing, LeaseUntil: until}
		if renewed {
			r.HeartbeatAt = until.Add(-time.Second)
		}
		return r
	}
	rows := []*leasetype.JobRow{
		row(1, seen.Add(time.Millisecond), false), // the lost reply's
		row(2, seen.Add(time.Minute), true),       // renewed: a reply brought it
		row(3, seen, false),                       // brought by the reply that set seen
		row(4, seen.Add(-time.Minute), false),     // an earlier reply's
		row(5, seen.Add(time.Millisecond), false), // held
	}
	held := func(id int64, attempt int) bool { return id == 5 && attempt == 1 }
	got := orphans(rows, seen.UnixMicro(), held)
	if len(got) != 1 || got[0].ID != 1 {
		ids := make([]int64, len(got))
		for i, r := range got {
			ids[i] = r.ID
		}
		t.Fatalf("orphans = %v, want [1]", ids)
	}
}

// TestClaimMarkKeepsTheLargestLease: seen is the largest lease_until of
// any reply, whatever order replies come in, and a failure is recorded
// once until the look clears it.
func TestClaimMarkKeepsTheLargestLease(t *testing.T) {
	var m claimMark
	at := time.Date(2026, 12, 6, 9, 0, 0, 0, time.UTC)
	m.replied([]*leasetype.JobRow{{LeaseUntil: at.Add(2 * time.Second)}, {LeaseUntil: at}})
	m.replied([]*leasetype.JobRow{{LeaseUntil: at.Add(time.Second)}})
	if got := m.seen.Load(); got != at.Add(2*time.Second).UnixMicro() {
		t.Errorf("seen = %d, want the largest lease_until %d", got, at.Add(2*time.Second).UnixMicro())
	}
	m.failed(10)
	m.failed(20)
	if got := m.lost.Load(); got != 10 {
		t.Errorf("lost = %d, want the first failure's 10", got)
	}
}

// TestReleasedOrphansReported: each orphan whose release applied is an
// EventFinished, released, or cancelled where a cancel request turned the
// release into cancelled; one whose fence matched nothing is not
// reported.
func TestReleasedOrphansReported(t *testing.T) {
	found := []*leasetype.JobRow{{ID: 1, Attempt: 1}, {ID: 2, Attempt: 1}, {ID: 3, Attempt: 1}}
	release := statemachine.Finish(statemachine.Ending{Outcome: leasetype.OutcomeReleased, Error: lostReplyError})
	evs := releasedEvents(found, release, []driver.FinishResult{{ID: 3}, {ID: 1, Cancelled: true}})
	want := map[int64][2]string{
		1: {string(leasetype.OutcomeCancelled), string(leasetype.StateCancelled)},
		3: {string(leasetype.OutcomeReleased), string(leasetype.StatePending)},
	}
	if len(evs) != len(want) {
		t.Fatalf("%d events, want %d: %+v", len(evs), len(want), evs)
	}
	for _, ev := range evs {
		if w, ok := want[ev.Job.ID]; !ok || ev.Kind != leasetype.EventFinished ||
			string(ev.Outcome) != w[0] || string(ev.State) != w[1] {
			t.Errorf("event of job %d: %s %s %s; want EventFinished %s %s", ev.Job.ID, ev.Kind, ev.Outcome, ev.State, w[0], w[1])
		}
	}
}
