package pgdriver

import (
	"slices"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/statemachine"
)

// nearDatabaseTime fails t unless got is within five minutes of want: the
// skew of TestDatabaseClockDecidesExpiry is an hour, so a time taken from
// the process clock is off by about that.
func nearDatabaseTime(t *testing.T, what string, got, want time.Time) {
	t.Helper()
	if off := got.Sub(want); off < -5*time.Minute || off > 5*time.Minute {
		t.Errorf("%s = %v, want about %v (the database clock's): off by %v", what, got, want, off)
	}
}

// checkHeartbeatByDatabaseClock: a heartbeat renews a lease to TTL past
// the database's now, not the client's.
func checkHeartbeatByDatabaseClock(t *testing.T, d *Driver) {
	ctx := testCtx(t)
	insertJobs(t, d, "hb", 1)
	j := claimOne(t, d, "hb", "w", time.Minute)
	const ttl = 20 * time.Minute
	hb, err := d.Heartbeat(ctx, &driver.HeartbeatParams{Owner: "w", TTL: ttl,
		Leases: []driver.LeaseRef{{ID: j.ID, Attempt: j.Attempt}}})
	if err != nil || len(hb) != 1 {
		t.Fatalf("Heartbeat: %v, %v", hb, err)
	}
	now, err := d.Now(ctx)
	if err != nil {
		t.Fatalf("Now: %v", err)
	}
	nearDatabaseTime(t, "lease_until after a heartbeat", getJob(t, d, j.ID).LeaseUntil, now.Add(ttl))
}

// checkProbeByDatabaseClock: the probe (ClaimableQueues) finds a queue
// whose job is due by the database clock, and not one whose job is due
// by the client's clock only.
func checkProbeByDatabaseClock(t *testing.T, d *Driver, skew time.Duration) {
	ctx := testCtx(t)
	now, err := d.Now(ctx)
	if err != nil {
		t.Fatalf("Now: %v", err)
	}
	p := job("probe")
	p.RunAt = now.Add(-skew / 2) // due by the database clock only when it is ahead
	if _, err := d.Insert(ctx, nil, []*driver.InsertParams{p}); err != nil {
		t.Fatalf("Insert: %v", err)
	}
	got, err := d.ClaimableQueues(ctx, &driver.ClaimableParams{
		Queues: map[string]bool{"probe": false}, Kinds: []string{"k"}, Owner: "w"})
	if err != nil {
		t.Fatalf("ClaimableQueues: %v", err)
	}
	if want := skew > 0; slices.Contains(got, "probe") != want {
		t.Errorf("ClaimableQueues = %v; the job is due by the database clock: %v", got, want)
	}
}

// checkRetryByDatabaseClock: a retry's delay runs from the database's
// now: the run_at a Finish writes, alone (the uniform statement) and
// beside another outcome (the statement of mixed transitions).
func checkRetryByDatabaseClock(t *testing.T, d *Driver) {
	ctx := testCtx(t)
	const delay = 10 * time.Minute
	retry := statemachine.Finish(statemachine.Ending{Outcome: leasehold.OutcomeRetried, Delay: delay, Error: "e"})
	done := statemachine.Finish(statemachine.Ending{Outcome: leasehold.OutcomeCompleted})
	for _, batch := range [][]driver.Transition{{retry}, {retry, done}} {
		insertJobs(t, d, "retry", len(batch))
		jobs := claimN(t, d, "retry", "w", time.Minute, len(batch))
		ps := make([]*driver.FinishParams, len(batch))
		for i, tr := range batch {
			ps[i] = &driver.FinishParams{ID: jobs[i].ID, Owner: "w", Attempt: jobs[i].Attempt, Transition: tr}
		}
		if ids, err := d.Finish(ctx, nil, ps); err != nil || len(ids) != len(ps) {
			t.Fatalf("Finish: %v, %v", ids, err)
		}
		now, err := d.Now(ctx)
		if err != nil {
			t.Fatalf("Now: %v", err)
		}
		nearDatabaseTime(t, "run_at of a retried job", getJob(t, d, jobs[0].ID).RunAt, now.Add(delay))
	}
}
