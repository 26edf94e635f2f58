package view_test

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/view"
)

// t0 is the database clock of the tests.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// jsonEqual fails unless v marshals to the JSON want (compared after
// compacting both), which pins every field name of the contract.
func jsonEqual(t *testing.T, v any, want string) {
	t.Helper()
	got, err := json.Marshal(v)
	if err != nil {
		t.Fatalf("marshal %T: %v", v, err)
	}
	var w bytes.Buffer
	if err := json.Compact(&w, []byte(want)); err != nil {
		t.Fatalf("bad want JSON: %v", err)
	}
	if !bytes.Equal(got, w.Bytes()) {
		t.Errorf("%T as JSON:\n got %s\nwant %s", v, got, w.Bytes())
	}
}

// processing is a job held under a lease with 1.5 s left.
func processing() *leasehold.JobRow {
	return &leasehold.JobRow{
		ID: 7, Kind: "payment.charge", Queue: "payments", State: leasehold.StateProcessing, Priority: 2,
		Attempt: 3, MaxAttempts: 5, FreeAttempts: 1, Args: json.RawMessage(`{"payment_id":"p-1"}`),
		Metadata: json.RawMessage(`{"tenant":"a"}`), UniqueKey: "p-1", UUID: "not shown",
		RunAt: t0.Add(-time.Minute), CreatedAt: t0.Add(-time.Hour), LeaseOwner: "host-1-ab",
		LeaseUntil: t0.Add(1500 * time.Millisecond), HeartbeatAt: t0.Add(-500 * time.Millisecond),
		LastError: "provider timeout",
	}
}

func TestJobViewProcessing(t *testing.T) {
	jsonEqual(t, view.NewJobView(processing(), t0), `{
		"id": 7, "kind": "payment.charge", "queue": "payments", "status": "processing", "priority": 2,
		"attempt": 3, "max_attempts": 5, "free_attempts": 1,
		"args": {"payment_id":"p-1"}, "metadata": {"tenant":"a"}, "unique_key": "p-1",
		"run_at": "2025-03-01T11:59:00Z", "created_at": "2025-03-01T11:00:00Z",
		"last_error": "provider timeout",
		"lease": {"owner": "host-1-ab", "until": "2025-03-01T12:00:01.5Z",
			"heartbeat_at": "2025-03-01T11:59:59.5Z", "left_seconds": 1.5, "expired": false}}`)
}

func TestJobViewExpiredLease(t *testing.T) {
	v := view.NewJobView(processing(), t0.Add(4*time.Second))
	if v.Lease == nil || !v.Lease.Expired || v.Lease.LeftSeconds != -2.5 {
		t.Errorf("lease 2.5 s past its end = %+v, want expired, -2.5 s left", v.Lease)
	}
}

// TestJobViewFinished: no lease, a finish time, and the optional fields
// omitted when empty (metadata "{}" counts as empty).
func TestJobViewFinished(t *testing.T) {
	j := &leasehold.JobRow{
		ID: 8, Kind: "sleep", Queue: "default", State: leasehold.StateCompleted, Attempt: 1, MaxAttempts: 25,
		Args: json.RawMessage(`{}`), Metadata: json.RawMessage(`{}`), RunAt: t0, CreatedAt: t0,
		FinishedAt: t0.Add(time.Second), LeaseOwner: "stale-owner", CancelRequested: true,
	}
	jsonEqual(t, view.NewJobView(j, t0), `{
		"id": 8, "kind": "sleep", "queue": "default", "status": "completed", "priority": 0,
		"attempt": 1, "max_attempts": 25, "free_attempts": 0, "args": {},
		"run_at": "2025-03-01T12:00:00Z", "created_at": "2025-03-01T12:00:00Z",
		"finished_at": "2025-03-01T12:00:01Z", "cancel_requested": true}`)
}

// TestJobInfoView: the history keeps every attempt's fields, a
// reconciler's resolution included (left out when there is none).
func TestJobInfoView(t *testing.T) {
	j := processing()
	info := &leasehold.JobInfo{JobRow: j, Attempts: []*leasehold.Attempt{
		{JobID: 7, Attempt: 2, Owner: "host-2-cd", ClaimedAt: t0.Add(-50 * time.Second),
			HeartbeatAt: t0.Add(-45 * time.Second), EndedAt: t0.Add(-40 * time.Second),
			Outcome: leasehold.OutcomeLeaseExpired, Resolution: "retried by reconcile job 12 (attempt 1): no charge"},
		// The running attempt: its heartbeat is on the job row; it has no
		// resolution, which the JSON leaves out.
		{JobID: 7, Attempt: 3, Owner: "host-1-ab", ClaimedAt: t0.Add(-30 * time.Second)},
	}}
	v := view.NewJobInfoView(info, t0)
	if v.ID != 7 || v.Lease == nil {
		t.Errorf("the job part = %+v", v.JobView)
	}
	jsonEqual(t, v.Attempts, `[
		{"attempt": 2, "owner": "host-2-cd", "claimed_at": "2025-03-01T11:59:10Z",
		 "heartbeat_at": "2025-03-01T11:59:15Z", "ended_at": "2025-03-01T11:59:20Z", "outcome": "lease_expired",
		 "resolution": "retried by reconcile job 12 (attempt 1): no charge"},
		{"attempt": 3, "owner": "host-1-ab", "claimed_at": "2025-03-01T11:59:30Z",
		 "heartbeat_at": "2025-03-01T11:59:59.5Z", "outcome": "running"}]`)
	unclaimed := view.NewJobInfoView(&leasehold.JobInfo{JobRow: &leasehold.JobRow{ID: 9}}, t0)
	if b, _ := json.Marshal(unclaimed); !bytes.Contains(b, []byte(`"attempts":[]`)) {
		t.Errorf("a job never claimed: %s, want an empty attempts array", b)
	}
}

// TestAttemptHeartbeat: only the running attempt of a processing job
// takes its heartbeat from the job row.
func TestAttemptHeartbeat(t *testing.T) {
	j := processing()
	hb := t0.Add(-10 * time.Second)
	cases := []struct {
		name string
		j    *leasehold.JobRow
		a    *leasehold.Attempt
		want time.Time
	}{
		{"running, not in the history yet", j, &leasehold.Attempt{Attempt: 3}, j.HeartbeatAt},
		{"running, in the history", j, &leasehold.Attempt{Attempt: 3, HeartbeatAt: hb}, hb},
		{"an earlier attempt", j, &leasehold.Attempt{Attempt: 2}, time.Time{}},
		{"ended", j, &leasehold.Attempt{Attempt: 3, Outcome: leasehold.OutcomeLeaseLost}, time.Time{}},
		{"job no longer processing", &leasehold.JobRow{Attempt: 3, State: leasehold.StatePending, HeartbeatAt: hb},
			&leasehold.Attempt{Attempt: 3}, time.Time{}},
	}
	for _, c := range cases {
		if got := view.AttemptHeartbeat(c.j, c.a); !got.Equal(c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
}

func TestOutcomeName(t *testing.T) {
	if got := view.OutcomeName(leasehold.OutcomeRunning); got != "running" {
		t.Errorf("OutcomeName(running) = %q", got)
	}
	if got := view.OutcomeName(leasehold.OutcomeSnoozed); got != "snoozed" {
		t.Errorf("OutcomeName(snoozed) = %q", got)
	}
}

func TestQueueView(t *testing.T) {
	q := &leasehold.QueueStats{
		Queue: "payments", Counts: map[leasehold.JobState]int64{leasehold.StatePending: 4, leasehold.StateProcessing: 2},
		OldestPending: 90 * time.Second, LiveLeases: 1, ExpiredLeases: 1,
		NeverClaimed: []*leasehold.KindBacklog{
			{Kind: "orphan", Due: 3, OldestDue: 10 * time.Minute},
			{Kind: "payment.charge", Due: 1, OldestDue: 10 * time.Minute, LiveLeases: 2},
		},
	}
	jsonEqual(t, view.NewQueueView(q, 5*time.Minute), `{
		"queue": "payments",
		"counts": {"cancelled": 0, "completed": 0, "failed": 0, "pending": 4, "processing": 2, "reconciling": 0, "stuck": 0},
		"oldest_pending_seconds": 90, "live_leases": 1, "expired_leases": 1, "paused": false,
		"never_claimed": [
			{"kind": "orphan", "due": 3, "oldest_due_seconds": 600, "live_leases": 0, "suspect": true},
			{"kind": "payment.charge", "due": 1, "oldest_due_seconds": 600, "live_leases": 2, "suspect": false}]}`)
	empty := view.NewQueueView(&leasehold.QueueStats{Queue: "q"}, time.Minute)
	if b, _ := json.Marshal(empty); !bytes.Contains(b, []byte(`"never_claimed":[]`)) || len(empty.Counts) != len(leasehold.AllStates) {
		t.Errorf("an empty queue: %s, want every state counted and an empty never_claimed", b)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	paused := view.NewQueueView(&leasehold.QueueStats{Queue: "q", Paused: true, PausedAt: at}, time.Minute)
	if b, _ := json.Marshal(paused); !bytes.Contains(b, []byte(`"paused":true,"paused_at":"2026-01-02T03:04:05Z"`)) {
		t.Errorf("a paused queue: %s, want paused and paused_at", b)
	}
}

func TestSuspect(t *testing.T) {
	const after = time.Minute
	cases := []struct {
		b    leasehold.KindBacklog
		want bool
	}{
		{leasehold.KindBacklog{Due: 1, OldestDue: after}, true},
		{leasehold.KindBacklog{Due: 1, OldestDue: after - time.Second}, false},
		{leasehold.KindBacklog{Due: 1, OldestDue: after, LiveLeases: 1}, false},
		{leasehold.KindBacklog{Due: 0, OldestDue: after}, false},
	}
	for _, c := range cases {
		if got := view.Suspect(&c.b, after); got != c.want {
			t.Errorf("Suspect(%+v) = %v, want %v", c.b, got, c.want)
		}
	}
}

func TestStatsView(t *testing.T) {
	s := leasehold.Stats{
		Claimed: 1, Completed: 2, Retried: 3, Failed: 4, Snoozed: 5, Cancelled: 6, Released: 7, LeaseLost: 8,
		FinishRefused: 9, HeartbeatErrors: 17, FinishErrors: 18, OutcomesDropped: 10, Rescued: 11, Panics: 12,
		Running: 99, SkippedLate: 13, EventsDropped: 14, ClaimedAgain: 15, Flagged: 16, ClaimErrors: 19, TakenOver: 20,
	}
	jsonEqual(t, view.NewStatsView("w1", s), `{"owner": "w1", "claimed": 1, "completed": 2, "retried": 3,
		"failed": 4, "snoozed": 5, "cancelled": 6, "flagged": 16, "released": 7, "lease_lost": 8, "finish_refused": 9,
		"heartbeat_errors": 17, "finish_errors": 18, "claim_errors": 19,
		"outcomes_dropped": 10, "rescued": 11, "taken_over": 20, "panics": 12, "skipped_late": 13, "claimed_again": 15,
		"events_dropped": 14}`)
}

func TestRescuedView(t *testing.T) {
	r := &leasehold.RescuedJob{ID: 3, Queue: "q", Kind: "k", Attempt: 2, Owner: "w", NewState: leasehold.StateStuck}
	jsonEqual(t, view.NewRescuedView(r), `{"id": 3, "kind": "k", "queue": "q", "attempt": 2, "owner": "w", "status": "stuck"}`)
}

func TestOwnerViews(t *testing.T) {
	a1 := processing() // host-1-ab, heartbeat t0-0.5s, live
	a2 := processing()
	a2.ID, a2.Queue, a2.HeartbeatAt, a2.LeaseUntil = 9, "default", time.Time{}, t0.Add(-time.Second)
	b := processing()
	b.ID, b.LeaseOwner, b.HeartbeatAt = 10, "host-2-cd", time.Time{}
	done := &leasehold.JobRow{ID: 11, State: leasehold.StateCompleted, LeaseOwner: "host-3"}
	got := view.NewOwnerViews([]*leasehold.JobRow{b, a1, done, a2}, t0)
	if len(got) != 2 || got[0].Owner != "host-1-ab" || got[1].Owner != "host-2-cd" {
		t.Fatalf("owners = %+v, want host-1-ab (2 leases) then host-2-cd", got)
	}
	o := got[0]
	if o.Leases != 2 || o.Expired != 1 || o.LastHeartbeat == nil || !o.LastHeartbeat.Equal(a1.HeartbeatAt) ||
		len(o.Jobs) != 2 || len(o.Queues) != 2 || o.Queues[0] != "default" || len(o.Kinds) != 1 {
		t.Errorf("host-1-ab = %+v", o)
	}
	jsonEqual(t, got[1].LastHeartbeat, `null`)
	if b, _ := json.Marshal(got[1]); bytes.Contains(b, []byte("last_heartbeat")) {
		t.Errorf("an owner never renewed: %s, want no last_heartbeat", b)
	}
}

// TestViewTimesInUTC: a view writes its times in UTC whatever their
// location (pgx reads a timestamptz in the process's zone, sqlitedriver
// in UTC), so the same job gives the same JSON on every driver and in
// every process.
func TestViewTimesInUTC(t *testing.T) {
	zone := time.FixedZone("UTC+1", 3600)
	in := func(tm time.Time) time.Time { return tm.In(zone) }
	j, local := processing(), processing()
	local.RunAt, local.CreatedAt, local.LeaseUntil, local.HeartbeatAt = in(j.RunAt), in(j.CreatedAt), in(j.LeaseUntil), in(j.HeartbeatAt)
	local.FinishedAt, j.FinishedAt = in(t0), t0
	attempts := func(row *leasehold.JobRow, at func(time.Time) time.Time) *leasehold.JobInfo {
		return &leasehold.JobInfo{JobRow: row, Attempts: []*leasehold.Attempt{{JobID: 7, Attempt: 2, Owner: "o",
			ClaimedAt: at(t0.Add(-time.Minute)), HeartbeatAt: at(t0.Add(-50 * time.Second)), EndedAt: at(t0.Add(-40 * time.Second))}}}
	}
	same := func(what string, utc, loc any) {
		t.Helper()
		a, _ := json.Marshal(utc)
		b, _ := json.Marshal(loc)
		if !bytes.Equal(a, b) {
			t.Errorf("%s with times in %s:\n got %s\nwant %s", what, zone, b, a)
		}
	}
	id := func(tm time.Time) time.Time { return tm }
	same("job", view.NewJobInfoView(attempts(j, id), t0), view.NewJobInfoView(attempts(local, in), t0))
	same("owners", view.NewOwnerViews([]*leasehold.JobRow{j}, t0), view.NewOwnerViews([]*leasehold.JobRow{local}, t0))
	p := &leasehold.PeriodicRow{Name: "tick", LastSlot: t0, NextSlot: t0.Add(time.Minute), UpdatedAt: t0}
	pl := &leasehold.PeriodicRow{Name: "tick", LastSlot: in(t0), NextSlot: in(t0.Add(time.Minute)), UpdatedAt: in(t0)}
	same("schedule", view.NewPeriodicView(p, t0), view.NewPeriodicView(pl, t0))
}
