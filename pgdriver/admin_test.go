package pgdriver

import (
	"errors"
	"strings"
	"testing"
	"time"

	leasehold "github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/statemachine"
)

func TestRescueExpired(t *testing.T) {
	d, _ := newTestDriver(t)
	ctx := testCtx(t)
	ps := []*driver.InsertParams{job("q"), job("flag"), job("q"), job("q"), job("q")}
	ps[2].MaxAttempts = 1
	res, err := d.Insert(ctx, nil, ps)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range res[:4] {
		got, err := d.ClaimByID(ctx, &driver.ClaimByIDParams{ID: r.Job.ID, Owner: "gone", TTL: -time.Second})
		if err != nil || got == nil {
			t.Fatalf("ClaimByID: %v", err)
		}
	}
	if _, err := d.CancelJob(ctx, res[3].Job.ID); err != nil {
		t.Fatal(err)
	}
	live, err := d.ClaimByID(ctx, &driver.ClaimByIDParams{ID: res[4].Job.ID, Owner: "alive", TTL: leaseTTL})
	if err != nil || live == nil {
		t.Fatalf("ClaimByID: %v", err)
	}
	rescued, err := d.RescueExpired(ctx, &driver.RescueParams{Decide: statemachine.Rescuer([]string{"flag"})})
	if err != nil || len(rescued) != 4 {
		t.Fatalf("RescueExpired: %+v, %v", rescued, err)
	}
	want := []leasehold.JobState{leasehold.StatePending, leasehold.StateStuck, leasehold.StateFailed, leasehold.StateCancelled}
	for i, r := range rescued {
		if r.ID != res[i].Job.ID || r.NewState != want[i] || r.Owner != "gone" || r.Attempt != 1 {
			t.Errorf("rescued %d: %+v, want state %s", i, r, want[i])
		}
		as, err := d.ListAttempts(ctx, r.ID)
		if err != nil || len(as) != 1 || as[0].Outcome != leasehold.OutcomeLeaseExpired || as[0].Error != "lease expired (owner gone)" {
			t.Errorf("attempts of %d: %+v, %v", r.ID, as, err)
		}
	}
	if j := getJob(t, d, live.ID); j.State != leasehold.StateProcessing {
		t.Fatalf("live lease rescued: %+v", j)
	}
	if again, err := d.RescueExpired(ctx, &driver.RescueParams{Decide: statemachine.Rescuer(nil)}); err != nil || len(again) != 0 {
		t.Fatalf("second RescueExpired: %+v, %v", again, err)
	}
}

func TestRetryAndCancel(t *testing.T) {
	d, _ := newTestDriver(t)
	ctx := testCtx(t)
	jobs := insertJobs(t, d, "q", 2)
	j := claimOne(t, d, "q", "w", leaseTTL)
	if _, err := d.RetryJob(ctx, &driver.RetryParams{ID: j.ID}); !errors.Is(err, leasehold.ErrJobRunning) {
		t.Fatalf("RetryJob(processing): %v", err)
	}
	c, err := d.CancelJob(ctx, j.ID)
	if err != nil || c.State != leasehold.StateProcessing || !c.CancelRequested {
		t.Fatalf("CancelJob(processing): %+v, %v", c, err)
	}
	if !finish(t, d, nil, &driver.FinishParams{ID: j.ID, Owner: "w", Attempt: 1, Transition: transition(leasehold.OutcomeFailed, "x")}) {
		t.Fatal("Finish refused")
	}
	if c, err := d.CancelJob(ctx, j.ID); !errors.Is(err, leasehold.ErrJobFinished) || c == nil || c.ID != j.ID {
		t.Fatalf("CancelJob(failed): %+v, %v", c, err)
	}
	r, err := d.RetryJob(ctx, &driver.RetryParams{ID: j.ID})
	if err != nil || r.State != leasehold.StatePending || r.FreeAttempts != 1 || !r.FinishedAt.IsZero() || r.CancelRequested {
		t.Fatalf("RetryJob(failed): %+v, %v", r, err)
	}
	other := jobs[0].ID + jobs[1].ID - j.ID
	if c, err := d.CancelJob(ctx, other); err != nil || c.State != leasehold.StateCancelled || c.FinishedAt.IsZero() {
		t.Fatalf("CancelJob(pending): %+v, %v", c, err)
	}
	for _, f := range []func() error{
		func() error { _, err := d.RetryJob(ctx, &driver.RetryParams{ID: 1 << 40}); return err },
		func() error { _, err := d.CancelJob(ctx, 1<<40); return err },
		func() error { _, err := d.GetJob(ctx, 1<<40); return err },
	} {
		if err := f(); !errors.Is(err, leasehold.ErrJobNotFound) {
			t.Fatalf("missing job: %v, want ErrJobNotFound", err)
		}
	}
	again := claimOne(t, d, "q", "w", leaseTTL)
	if !finish(t, d, nil, &driver.FinishParams{ID: again.ID, Owner: "w", Attempt: again.Attempt, Transition: transition(leasehold.OutcomeCompleted, "")}) {
		t.Fatal("Finish refused")
	}
	// The sentinel as is: the Client names the operation and the job.
	if _, err := d.RetryJob(ctx, &driver.RetryParams{ID: again.ID}); err != leasehold.ErrJobCompleted {
		t.Fatalf("RetryJob(completed) = %v, want ErrJobCompleted itself", err)
	}
}

func TestListJobsStatsPurge(t *testing.T) {
	d, _ := newTestDriver(t)
	ctx := testCtx(t)
	insertJobs(t, d, "a", 3)
	insertJobs(t, d, "b", 1)
	j := claimOne(t, d, "a", "w", -time.Second)
	list := func(p *leasehold.ListParams) []*leasehold.JobRow {
		t.Helper()
		jobs, err := d.ListJobs(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		return jobs
	}
	if n := len(list(nil)); n != 4 {
		t.Fatalf("ListJobs(all) = %d", n)
	}
	if got := list(&leasehold.ListParams{Expired: true, Owner: "w", Queue: "a", Kind: "k"}); len(got) != 1 || got[0].ID != j.ID {
		t.Fatalf("ListJobs(expired) = %+v", got)
	}
	if got := list(&leasehold.ListParams{States: []leasehold.JobState{leasehold.StatePending}, AfterID: j.ID, Limit: 1}); len(got) != 1 || got[0].ID <= j.ID {
		t.Fatalf("ListJobs(pending after) = %+v", got)
	}
	stats, err := d.QueueStats(ctx)
	if err != nil || len(stats) != 2 || stats[0].Queue != "a" {
		t.Fatalf("QueueStats: %+v, %v", stats, err)
	}
	a := stats[0]
	if a.Counts[leasehold.StatePending] != 2 || a.Counts[leasehold.StateProcessing] != 1 || a.ExpiredLeases != 1 || a.LiveLeases != 0 || a.OldestPending < 0 {
		t.Fatalf("stats of a: %+v", a)
	}
	if !finish(t, d, nil, &driver.FinishParams{ID: j.ID, Owner: "w", Attempt: 1, Transition: transition(leasehold.OutcomeCompleted, "")}) {
		t.Fatal("Finish refused")
	}
	if n, err := d.Purge(ctx, &driver.PurgeParams{OlderThan: time.Hour}); err != nil || n != 0 {
		t.Fatalf("Purge(old) = %d, %v", n, err)
	}
	if n, err := d.Purge(ctx, &driver.PurgeParams{OlderThan: -time.Second}); err != nil || n != 1 {
		t.Fatalf("Purge = %d, %v", n, err)
	}
	if as, err := d.ListAttempts(ctx, j.ID); err != nil || len(as) != 0 {
		t.Fatalf("attempts left after purge: %+v, %v", as, err)
	}
}

// TestOperatorGivesUpOnChurn: an operator action whose write keeps
// matching nothing while the job, read again, is in a state the action
// allows, gives up after its tries with ErrJobChanging, the sentinel
// itself unprefixed, and writes nothing. A trigger that skips every
// write of the jobs makes the churn deterministic.
func TestOperatorGivesUpOnChurn(t *testing.T) {
	d, _ := newTestDriver(t)
	ctx := testCtx(t)
	jobs := insertJobs(t, d, "q", 2)
	failed := claimOne(t, d, "q", "w", leaseTTL)
	if !finish(t, d, nil, &driver.FinishParams{ID: failed.ID, Owner: "w", Attempt: 1, Transition: transition(leasehold.OutcomeFailed, "x")}) {
		t.Fatal("Finish refused")
	}
	pending := jobs[0].ID + jobs[1].ID - failed.ID
	for _, stmt := range []string{
		`CREATE SEQUENCE churn_writes`,
		`CREATE FUNCTION churn_skip() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN PERFORM nextval('churn_writes'); RETURN NULL; END $$`,
		`CREATE TRIGGER churn_skip BEFORE UPDATE OR DELETE ON leasehold_jobs FOR EACH ROW EXECUTE FUNCTION churn_skip()`,
	} {
		if _, err := d.pool.Exec(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	for _, tc := range []struct {
		name string
		id   int64
		op   func() (*leasehold.JobRow, error)
	}{
		{"RetryJob", failed.ID, func() (*leasehold.JobRow, error) { return d.RetryJob(ctx, &driver.RetryParams{ID: failed.ID}) }},
		{"CancelJob", pending, func() (*leasehold.JobRow, error) { return d.CancelJob(ctx, pending) }},
		{"DeleteJob", failed.ID, func() (*leasehold.JobRow, error) { return d.DeleteJob(ctx, failed.ID) }},
	} {
		before := getJob(t, d, tc.id)
		var start int64
		if err := d.pool.QueryRow(ctx, `SELECT coalesce((SELECT last_value FROM churn_writes WHERE is_called), 0)`).Scan(&start); err != nil {
			t.Fatal(err)
		}
		_, err := tc.op()
		if !errors.Is(err, leasehold.ErrJobChanging) || strings.HasPrefix(err.Error(), "pgdriver") {
			t.Errorf("%s of a job whose writes keep missing = %v, want ErrJobChanging", tc.name, err)
		}
		var end int64
		if err := d.pool.QueryRow(ctx, `SELECT last_value FROM churn_writes`).Scan(&end); err != nil {
			t.Fatal(err)
		}
		if end-start != maxOperatorTries {
			t.Errorf("%s tried its write %d times, want %d", tc.name, end-start, maxOperatorTries)
		}
		if after := getJob(t, d, tc.id); after.State != before.State {
			t.Errorf("%s changed the job from %s to %s", tc.name, before.State, after.State)
		}
	}
}
