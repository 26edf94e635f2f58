package statemachine

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/leasehold/leasehold/leasetype"
)

var target = ReconcileTarget{Kind: "leasehold.reconcile", Queue: "rec", MaxAttempts: 4, Priority: 2}

func TestPolicyRescuer(t *testing.T) {
	decide := PolicyRescuer(Policy{Flag: []string{"flagged", "recflagged"}, Reconcile: map[string]ReconcileTarget{"payments": target, "rec": target}})
	for _, c := range []struct {
		queue, kind string
		attempt     int
		cancel      bool
		want        leasetype.JobState
	}{
		{"payments", "charge", 1, false, leasetype.StateReconciling},
		{"payments", "charge", 3, false, leasetype.StateReconciling}, // budget spent: still reconciled
		{"payments", "charge", 1, true, leasetype.StateReconciling},  // cancel requested: the reconciler decides first
		{"flagged", "charge", 1, false, leasetype.StateStuck},
		{"emails", "send", 1, false, leasetype.StatePending},
		{"rec", "leasehold.reconcile", 1, false, leasetype.StatePending},      // a reconcile job is never reconciled
		{"recflagged", "leasehold.reconcile", 1, false, leasetype.StateStuck}, // but flagged in a FlagStuck queue
		{"rec", "leasehold.reconcile", 3, false, leasetype.StateStuck},        // and never failed: its budget spent, an operator decides
		{"rec", "leasehold.reconcile", 3, true, leasetype.StateCancelled},     // unless an operator cancelled it
		{"emails", "send", 3, false, leasetype.StateFailed},
		{"flagged", "charge", 3, false, leasetype.StateStuck}, // budget spent: still flagged
	} {
		j := &leasetype.JobRow{ID: 7, Kind: c.kind, Queue: c.queue, State: leasetype.StateProcessing, Attempt: c.attempt,
			MaxAttempts: 3, CancelRequested: c.cancel, LeaseOwner: "host-1", UUID: "9b2f5f8e-0000-4000-8000-000000000001"}
		tr := decide(j)
		if tr.State != c.want {
			t.Errorf("%s/%s attempt %d cancel %v -> %s, want %s", c.queue, c.kind, c.attempt, c.cancel, tr.State, c.want)
		}
		if err := tr.Validate(); err != nil {
			t.Errorf("%s/%s: invalid transition: %v", c.queue, c.kind, err)
		}
		if (tr.Spawn != nil) != (c.want == leasetype.StateReconciling) {
			t.Errorf("%s/%s -> %s with Spawn %v", c.queue, c.kind, tr.State, tr.Spawn)
		}
	}
}

func TestReconcileSpawn(t *testing.T) {
	j := &leasetype.JobRow{ID: 7, Kind: "charge", Queue: "payments", State: leasetype.StateProcessing, Attempt: 2,
		MaxAttempts: 3, LeaseOwner: "host-1", UUID: "9b2f5f8e-0000-4000-8000-000000000001"}
	tr := Reconcile(j, target)
	if !tr.KeepRunAt || tr.FreeAttempt || tr.Finished || tr.Outcome != leasetype.OutcomeLeaseExpired ||
		tr.LastError != "lease expired (owner host-1)" {
		t.Errorf("Reconcile = %+v: want run_at kept, attempt charged, unfinished, lease_expired", tr)
	}
	s := tr.Spawn
	if s.Kind != target.Kind || s.Queue != target.Queue || s.MaxAttempts != 4 || s.Priority != 2 || !s.Notify {
		t.Errorf("Spawn = %+v, want the target's kind, queue, budget, priority and a wake-up", s)
	}
	if want := "reconcile:leasehold-9b2f5f8e-0000-4000-8000-000000000001:2"; s.UniqueKey != want {
		t.Errorf("Spawn.UniqueKey = %q, want %q", s.UniqueKey, want)
	}
	var a leasetype.ReconcileArgs
	if err := json.Unmarshal(s.Args, &a); err != nil {
		t.Fatal(err)
	}
	want := leasetype.ReconcileArgs{JobID: 7, Attempt: 2, IdempotencyKey: j.IdempotencyKey(), JobKind: "charge", JobQueue: "payments"}
	if a != want {
		t.Errorf("Spawn args = %+v, want %+v", a, want)
	}
}

func TestResolve(t *testing.T) {
	for _, c := range []struct {
		r                Resolution
		state            leasetype.JobState
		keepRunAt, free  bool
		delay, wantDelay time.Duration
	}{
		{ResolveComplete, leasetype.StateCompleted, true, false, time.Hour, 0},
		{ResolveRetry, leasetype.StatePending, false, false, time.Hour, time.Hour},
		{ResolveSnooze, leasetype.StatePending, false, true, time.Minute, time.Minute},
		{ResolveStuck, leasetype.StateStuck, true, false, time.Hour, 0},
		{ResolveFail, leasetype.StateFailed, true, false, 0, 0},
	} {
		tr, err := Resolve(c.r, c.delay, "why")
		if err != nil {
			t.Fatalf("Resolve(%d): %v", c.r, err)
		}
		if tr.State != c.state || tr.KeepRunAt != c.keepRunAt || tr.FreeAttempt != c.free || tr.Delay != c.wantDelay ||
			tr.LastError != "why" || tr.KeepLastError || tr.Finished != c.state.Finished() || tr.Spawn != nil {
			t.Errorf("Resolve(%d) = %+v", c.r, tr)
		}
		if err := tr.Validate(); err != nil {
			t.Errorf("Resolve(%d): invalid transition: %v", c.r, err)
		}
	}
	if tr, _ := Resolve(ResolveComplete, 0, ""); !tr.KeepLastError {
		t.Errorf("Resolve without a note = %+v, want last_error kept", tr)
	}
	if _, err := Resolve(Resolution(99), 0, ""); err == nil {
		t.Error("Resolve(99) accepted")
	}
	for _, r := range []Resolution{ResolveRetry, ResolveSnooze} {
		if _, err := Resolve(r, -time.Second, ""); err == nil {
			t.Errorf("Resolve(%d) with a negative delay accepted", r)
		}
	}
	// A delay is ignored, whatever its value, by the resolutions that do
	// not run the job again.
	for _, r := range []Resolution{ResolveComplete, ResolveStuck, ResolveFail} {
		tr, err := Resolve(r, -time.Hour, "")
		if err != nil || tr.Delay != 0 || !tr.KeepRunAt {
			t.Errorf("Resolve(%d) with a negative delay = %+v, %v; want it ignored", r, tr, err)
		}
	}
}
