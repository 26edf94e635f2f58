package pgdriver

import (
	"testing"
	"time"

	leasehold "github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/statemachine"
)

func TestFinishFencing(t *testing.T) {
	d, _ := newTestDriver(t)
	insertJobs(t, d, "q", 1)
	j := claimOne(t, d, "q", "w1", leaseTTL)
	refused := []*driver.FinishParams{
		{ID: j.ID, Owner: "w2", Attempt: j.Attempt, Transition: transition(leasehold.OutcomeCompleted, "")},     // wrong owner
		{ID: j.ID, Owner: "w1", Attempt: j.Attempt + 1, Transition: transition(leasehold.OutcomeCompleted, "")}, // wrong attempt
		{ID: j.ID, Owner: "w1", Attempt: j.Attempt - 1, Transition: transition(leasehold.OutcomeFailed, "")},    // stale attempt
	}
	for _, p := range refused {
		if finish(t, d, nil, p) {
			t.Fatalf("fence accepted %+v", p)
		}
	}
	if got := getJob(t, d, j.ID); got.State != leasehold.StateProcessing || got.LeaseOwner != "w1" {
		t.Fatalf("refused Finish changed the job: %+v", got)
	}
	ok := &driver.FinishParams{ID: j.ID, Owner: "w1", Attempt: j.Attempt, Transition: transition(leasehold.OutcomeCompleted, "")}
	if !finish(t, d, nil, ok) {
		t.Fatal("right fence refused")
	}
	if finish(t, d, nil, ok) {
		t.Fatal("second Finish of the same lease accepted")
	}
	got := getJob(t, d, j.ID)
	if got.State != leasehold.StateCompleted || got.FinishedAt.IsZero() || got.LeaseOwner != "" || !got.LeaseUntil.IsZero() {
		t.Fatalf("completed job: %+v", got)
	}
}

func TestFinishOutcomes(t *testing.T) {
	d, _ := newTestDriver(t)
	ctx := testCtx(t)
	cases := []struct {
		outcome  leasehold.Outcome
		state    leasehold.JobState
		free     int
		lastErr  string
		finished bool
		delayed  bool
	}{
		{leasehold.OutcomeCompleted, leasehold.StateCompleted, 0, "", true, false},
		{leasehold.OutcomeRetried, leasehold.StatePending, 0, "boom", false, true},
		{leasehold.OutcomeFailed, leasehold.StateFailed, 0, "boom", true, false},
		{leasehold.OutcomeSnoozed, leasehold.StatePending, 1, "", false, true},
		{leasehold.OutcomeReleased, leasehold.StatePending, 1, "", false, false}, // keeps its place in line
		{leasehold.OutcomeCancelled, leasehold.StateCancelled, 0, "boom", true, false},
		{leasehold.OutcomeLeaseLost, leasehold.StatePending, 0, "boom", false, false},
	}
	insertJobs(t, d, "q", len(cases))
	jobs, err := d.Claim(ctx, &driver.ClaimParams{Queue: "q", Kinds: []string{"k"}, Owner: "w", TTL: leaseTTL, Limit: len(cases)})
	if err != nil || len(jobs) != len(cases) {
		t.Fatalf("Claim: %d, %v", len(jobs), err)
	}
	ps := make([]*driver.FinishParams, len(cases))
	for i, c := range cases {
		e := statemachine.Ending{Outcome: c.outcome, Delay: time.Hour, Error: c.lastErr}
		ps[i] = &driver.FinishParams{ID: jobs[i].ID, Owner: "w", Attempt: 1, Transition: statemachine.Finish(e)}
	}
	ids, err := d.Finish(ctx, nil, ps)
	if err != nil || len(ids) != len(cases) {
		t.Fatalf("Finish: %v, %v", ids, err)
	}
	for i, c := range cases {
		j := getJob(t, d, jobs[i].ID)
		if j.State != c.state || j.FreeAttempts != c.free || j.LastError != c.lastErr || j.FinishedAt.IsZero() == c.finished {
			t.Errorf("%s: job %+v", c.outcome, j)
		}
		if delayed := j.RunAt.Sub(j.CreatedAt) > 30*time.Minute; delayed != c.delayed {
			t.Errorf("%s: run_at %v, created %v", c.outcome, j.RunAt, j.CreatedAt)
		}
		as, err := d.ListAttempts(ctx, j.ID)
		if err != nil || len(as) != 1 || as[0].Outcome != c.outcome || as[0].EndedAt.IsZero() || as[0].Error != c.lastErr {
			t.Errorf("%s: attempts %+v, %v", c.outcome, as, err)
		}
	}
	_, err = d.Finish(ctx, nil, []*driver.FinishParams{{ID: 1, Owner: "w", Attempt: 1, Transition: transition("exploded", "")}})
	if err == nil {
		t.Fatal("Finish accepted an unknown outcome")
	}
}

func TestFinishCopiesHeartbeat(t *testing.T) {
	d, _ := newTestDriver(t)
	ctx := testCtx(t)
	insertJobs(t, d, "q", 1)
	j := claimOne(t, d, "q", "w", leaseTTL)
	if _, err := d.Heartbeat(ctx, &driver.HeartbeatParams{Owner: "w", TTL: leaseTTL, Leases: []driver.LeaseRef{{ID: j.ID, Attempt: 1}}}); err != nil {
		t.Fatal(err)
	}
	if !finish(t, d, nil, &driver.FinishParams{ID: j.ID, Owner: "w", Attempt: 1, Transition: transition(leasehold.OutcomeCompleted, "")}) {
		t.Fatal("Finish refused")
	}
	as, err := d.ListAttempts(ctx, j.ID)
	if err != nil || len(as) != 1 || as[0].HeartbeatAt.IsZero() || !as[0].HeartbeatAt.Equal(getJob(t, d, j.ID).HeartbeatAt) {
		t.Fatalf("attempt heartbeat not copied: %+v, %v", as, err)
	}
}
