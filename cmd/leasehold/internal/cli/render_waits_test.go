package cli

import (
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
)

// renderJobText returns what RenderJob prints for j at now, its runs of
// spaces folded to one.
func renderJobText(t *testing.T, j *leasehold.JobRow, now time.Time) string {
	t.Helper()
	var b strings.Builder
	if err := RenderJob(&b, &leasehold.JobInfo{JobRow: j}, now); err != nil {
		t.Fatal(err)
	}
	return strings.Join(strings.Fields(b.String()), " ")
}

// TestRenderJobCancelOnExpiredLease: a processing job whose lease expired
// with a cancel requested has no handler left to see the request at a
// heartbeat, and no claim takes over its lease: jobs show says the
// watcher ends it (the reconciler deciding first where the queue
// reconciles). A live lease's request is still seen at the next
// heartbeat, and an expired lease with no request is the watcher's or a
// new claim's.
func TestRenderJobCancelOnExpiredLease(t *testing.T) {
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	job := func(leaseLeft time.Duration, cancel bool) *leasehold.JobRow {
		return &leasehold.JobRow{ID: 5, Kind: "k", Queue: "q", State: leasehold.StateProcessing, Attempt: 1, MaxAttempts: 20,
			Args: []byte("{}"), LeaseOwner: "w1", LeaseUntil: now.Add(leaseLeft), HeartbeatAt: now.Add(leaseLeft - 5*time.Second),
			CancelRequested: cancel, CreatedAt: now.Add(-2 * time.Minute), RunAt: now.Add(-2 * time.Minute)}
	}
	out := renderJobText(t, job(-time.Minute, true), now)
	for _, bad := range []string{"next heartbeat", "new claim"} {
		if strings.Contains(out, bad) {
			t.Errorf("expired lease, cancel requested: says %q:\n%s", bad, out)
		}
	}
	for _, want := range []string{"expired 1m ago (the watcher takes it back)",
		"the stuck watcher ends the job at its next pass (in a queue that reconciles, its reconciler decides first)"} {
		if !strings.Contains(out, want) {
			t.Errorf("expired lease, cancel requested: lacks %q:\n%s", want, out)
		}
	}
	if out := renderJobText(t, job(time.Minute, true), now); !strings.Contains(out, "cancelled at its next heartbeat") {
		t.Errorf("live lease, cancel requested: want the next heartbeat to cancel it:\n%s", out)
	}
	if out := renderJobText(t, job(-time.Minute, false), now); !strings.Contains(out, "(the watcher or a new claim takes it back)") {
		t.Errorf("expired lease, no cancel: want the watcher or a new claim to take it:\n%s", out)
	}
}

// TestRenderJobRunAtWaiting: the watcher keeps the run_at of a job it
// flags stuck or sends to reconciling, a time past, but no claim takes
// it: jobs show says what it waits for instead of a due time.
func TestRenderJobRunAtWaiting(t *testing.T) {
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	for state, want := range map[leasehold.JobState]string{
		leasehold.StateStuck:       "run at - (waits for an operator)",
		leasehold.StateReconciling: "run at - (reconciler deciding)",
		leasehold.StatePending:     "run at 2030-01-01",
	} {
		j := &leasehold.JobRow{ID: 5, Kind: "k", Queue: "q", State: state, Attempt: 1, MaxAttempts: 20,
			Args: []byte("{}"), CreatedAt: now.Add(-2 * time.Minute), RunAt: now.Add(-41 * time.Second)}
		if out := renderJobText(t, j, now); !strings.Contains(out, want) {
			t.Errorf("%s job: lacks %q:\n%s", state, want, out)
		}
	}
}

// TestRenderUnclaimedPaused: the never-claimed jobs of a paused queue
// wait for the resume: the line says so, and does not ask whether a
// worker for the kind runs.
func TestRenderUnclaimedPaused(t *testing.T) {
	backlog := []*leasehold.KindBacklog{{Kind: "email.send", Due: 12, OldestDue: 10 * time.Minute}}
	var b strings.Builder
	err := RenderUnclaimed(&b, []*leasehold.QueueStats{
		{Queue: "mail", Paused: true, NeverClaimed: backlog},
		{Queue: "other", NeverClaimed: backlog},
	}, time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("RenderUnclaimed printed %d lines, want 2:\n%s", len(lines), b.String())
	}
	if l := lines[0]; !strings.Contains(l, "queue mail") || !strings.Contains(l, "the queue is paused (leasehold queues resume mail)") ||
		strings.Contains(l, "worker") {
		t.Errorf("paused queue: %q, want it to say the queue is paused, not ask for a worker", l)
	}
	if l := lines[1]; !strings.Contains(l, "queue other") || !strings.Contains(l, "is a worker for it running?") {
		t.Errorf("queue not paused: %q, want it to ask for a worker", l)
	}
}
