package sqlitedriver

import (
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/statemachine"
)

func TestHeartbeat(t *testing.T) {
	d := openTest(t)
	ctx := testCtx(t)
	insertN(t, d, 2)
	js := claim(t, d, "w", 2, time.Second, false)
	if _, err := d.CancelJob(ctx, js[1].ID); err != nil {
		t.Fatal(err)
	}
	held, err := d.Heartbeat(ctx, &driver.HeartbeatParams{Owner: "w", TTL: time.Hour, Leases: []driver.LeaseRef{
		{ID: js[0].ID, Attempt: 1}, {ID: js[1].ID, Attempt: 1}, {ID: 12345, Attempt: 1},
	}})
	if err != nil || len(held) != 2 {
		t.Fatalf("Heartbeat = %v, %v; want 2 leases", held, err)
	}
	for _, h := range held {
		if h.CancelRequested != (h.ID == js[1].ID) {
			t.Errorf("lease %d CancelRequested = %v", h.ID, h.CancelRequested)
		}
	}
	got := mustGet(t, d, js[0].ID)
	if got.HeartbeatAt.IsZero() || got.LeaseUntil.Sub(got.HeartbeatAt) != time.Hour {
		t.Errorf("after heartbeat: heartbeat_at %v lease_until %v", got.HeartbeatAt, got.LeaseUntil)
	}
	held, err = d.Heartbeat(ctx, &driver.HeartbeatParams{Owner: "other", TTL: time.Hour,
		Leases: []driver.LeaseRef{{ID: js[0].ID, Attempt: 1}}})
	if err != nil || len(held) != 0 {
		t.Errorf("Heartbeat by another owner = %v, %v; want none", held, err)
	}
}

func TestRescueExpired(t *testing.T) {
	d := openTest(t)
	ctx := testCtx(t)
	mk := func(queue string, maxAttempts int) *driver.InsertParams {
		p := job(`{}`)
		p.Queue, p.MaxAttempts = queue, maxAttempts
		return p
	}
	ins := insert(t, d, mk("q", 3), mk("q", 1), mk("flag", 3), mk("q", 3), mk("q", 3))
	claimQ := func(queue string, ttl time.Duration) {
		_, err := d.Claim(ctx, &driver.ClaimParams{Queue: queue, Kinds: []string{"k"}, Owner: "w",
			TTL: ttl, Limit: 10})
		if err != nil {
			t.Fatal(err)
		}
	}
	claimQ("flag", -time.Second)
	if _, err := d.ClaimByID(ctx, &driver.ClaimByIDParams{ID: ins[4].ID, Owner: "live", TTL: time.Hour}); err != nil {
		t.Fatal(err)
	}
	claimQ("q", -time.Second)
	if _, err := d.CancelJob(ctx, ins[3].ID); err != nil {
		t.Fatal(err)
	}
	rescued, err := d.RescueExpired(ctx, &driver.RescueParams{Decide: statemachine.Rescuer([]string{"flag"})})
	if err != nil {
		t.Fatal(err)
	}
	want := map[int64]leasehold.JobState{
		ins[0].ID: leasehold.StatePending, ins[1].ID: leasehold.StateFailed,
		ins[2].ID: leasehold.StateStuck, ins[3].ID: leasehold.StateCancelled,
	}
	if len(rescued) != len(want) {
		t.Fatalf("rescued %d jobs, want %d", len(rescued), len(want))
	}
	for _, r := range rescued {
		if r.NewState != want[r.ID] || r.Owner != "w" || r.Attempt != 1 {
			t.Errorf("rescued %+v, want state %s", r, want[r.ID])
		}
		j := mustGet(t, d, r.ID)
		if j.State != r.NewState || j.LeaseOwner != "" || j.LastError != "lease expired (owner w)" ||
			j.FinishedAt.IsZero() != (r.NewState == leasehold.StatePending || r.NewState == leasehold.StateStuck) {
			t.Errorf("job after rescue = %+v", j)
		}
		a := attempts(t, d, r.ID)[0]
		if a.Outcome != leasehold.OutcomeLeaseExpired || a.EndedAt.IsZero() || a.Error != j.LastError {
			t.Errorf("attempt after rescue = %+v", a)
		}
	}
	if again, err := d.RescueExpired(ctx, &driver.RescueParams{Decide: statemachine.Rescuer(nil)}); err != nil || len(again) != 0 {
		t.Errorf("second rescue = %v, %v", again, err)
	}
	if j := mustGet(t, d, ins[4].ID); j.State != leasehold.StateProcessing {
		t.Errorf("live lease rescued: %+v", j)
	}
}
