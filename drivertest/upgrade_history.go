package drivertest

import (
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/statemachine"
)

// CheckHistoryAfterUpgrade checks a driver just migrated from a schema
// whose claims wrote an open history row (before migration 008), holding
// three processing jobs of kind "k" at attempt 1, each with the open row
// of its attempt: owner "old-live" holds a live lease in queue "live";
// the leases of "old-expired" (queue "q") and "old-rescued" (queue "r")
// have expired. Each attempt keeps its one history row, with its claim
// time, until whatever ends it after the upgrade ends that row: the
// owner's finish, a takeover at claim, the watcher. A driver's schema
// upgrade tests call it.
func CheckHistoryAfterUpgrade(t testing.TB, d driver.Driver) {
	t.Helper()
	c := &upgradeCheck{t: t, d: d, claimed: map[int64]time.Time{}}
	jobs := c.openJobs()
	live, expired, rescued := jobs["old-live"], jobs["old-expired"], jobs["old-rescued"]

	ok := statemachine.Finish(statemachine.Ending{Outcome: leasehold.OutcomeCompleted})
	done, err := d.Finish(t.Context(), nil, []*driver.FinishParams{{ID: live.ID, Owner: "old-live", Attempt: 1, Transition: ok}})
	if err != nil || len(done) != 1 {
		t.Fatalf("Finish of the live lease from before the upgrade = %v, %v; want it applied", done, err)
	}
	c.ended(live, leasehold.OutcomeCompleted, live.HeartbeatAt)

	got, err := d.Claim(t.Context(), &driver.ClaimParams{
		Queue: "q", Kinds: []string{"k"}, Owner: "new", TTL: time.Hour, Limit: 10, TakeOver: true,
	})
	if err != nil || len(got) != 1 || got[0].ID != expired.ID || got[0].Attempt != 2 {
		t.Fatalf("Claim taking over the lease from before the upgrade = %+v, %v; want job %d at attempt 2", got, err, expired.ID)
	}
	as := c.ended(expired, leasehold.OutcomeLeaseExpired, expired.HeartbeatAt)
	if len(as) != 2 || as[1].Owner != "new" || as[1].Outcome != leasehold.OutcomeRunning {
		t.Errorf("history of the job taken over = %+v, want attempt 2 running for owner new", as)
	}

	res, err := d.RescueExpired(t.Context(), &driver.RescueParams{Decide: statemachine.Rescuer(nil)})
	if err != nil || len(res) != 1 {
		t.Fatalf("RescueExpired after the upgrade = %+v, %v; want the job of old-rescued", res, err)
	}
	c.ended(rescued, leasehold.OutcomeLeaseExpired, rescued.HeartbeatAt)
}

// upgradeCheck is the state of CheckHistoryAfterUpgrade: the claim time of
// each job's attempt 1 as read before anything ended it.
type upgradeCheck struct {
	t       testing.TB
	d       driver.Driver
	claimed map[int64]time.Time
}

// openJobs returns the processing jobs by owner, after checking that each
// shows its one attempt running, once.
func (c *upgradeCheck) openJobs() map[string]*leasehold.JobRow {
	c.t.Helper()
	rows, err := c.d.ListJobs(c.t.Context(), &leasehold.ListParams{States: []leasehold.JobState{leasehold.StateProcessing}})
	if err != nil || len(rows) != 3 {
		c.t.Fatalf("ListJobs of processing jobs after the upgrade = %d jobs, %v; want 3", len(rows), err)
	}
	jobs := map[string]*leasehold.JobRow{}
	for _, j := range rows {
		as := c.attempts(j.ID)
		if len(as) != 1 || as[0].Attempt != 1 || as[0].Owner != j.LeaseOwner || as[0].Outcome != leasehold.OutcomeRunning {
			c.t.Fatalf("history of job %d (%s) after the upgrade = %+v, want its attempt 1 running, once", j.ID, j.LeaseOwner, as)
		}
		c.claimed[j.ID] = as[0].ClaimedAt
		jobs[j.LeaseOwner] = j
	}
	return jobs
}

// ended checks that attempt 1 of job j ended with outcome and the job
// row's last heartbeat hb, keeping its owner and claim time, in one row;
// it returns the job's history.
func (c *upgradeCheck) ended(j *leasehold.JobRow, outcome leasehold.Outcome, hb time.Time) []*leasehold.Attempt {
	c.t.Helper()
	as := c.attempts(j.ID)
	if len(as) == 0 || as[0].Attempt != 1 {
		c.t.Fatalf("history of job %d = %+v, want attempt 1 first", j.ID, as)
	}
	a := as[0]
	if a.Owner != j.LeaseOwner || a.Outcome != outcome || a.EndedAt.IsZero() || !a.ClaimedAt.Equal(c.claimed[j.ID]) ||
		!a.HeartbeatAt.Equal(hb) {
		c.t.Errorf("attempt 1 of job %d = %+v; want owner %s, outcome %s, ended, claimed at %v, heartbeat %v",
			j.ID, a, j.LeaseOwner, outcome, c.claimed[j.ID], hb)
	}
	return as
}

// attempts reads job id's history.
func (c *upgradeCheck) attempts(id int64) []*leasehold.Attempt {
	c.t.Helper()
	as, err := c.d.ListAttempts(c.t.Context(), id)
	if err != nil {
		c.t.Fatalf("ListAttempts(%d): %v", id, err)
	}
	return as
}
