package sqlitedriver

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// TestClaimReturnsStoredRows checks that every job a batch claim returns,
// fresh or taken over, with its fields filled in from the claim, is the
// row the database holds: the claim reads only the columns it does not
// set. TakenOver, which only a claim sets, marks the job taken over.
func TestClaimReturnsStoredRows(t *testing.T) {
	d := openTest(t)
	ps := []*driver.InsertParams{job(`{"n":0}`), job(`{"n":1}`), job(`{"n":2}`)}
	ps[1].UniqueKey, ps[1].Metadata, ps[2].Priority = "k1", []byte(`{"m":1}`), 2
	insert(t, d, ps...)
	expired := claim(t, d, "w0", 1, time.Minute, false)
	if len(expired) != 1 {
		t.Fatalf("claimed %d jobs, want 1", len(expired))
	}
	// A heartbeat with a negative TTL records a heartbeat and expires the
	// lease by the database clock.
	hb, err := d.Heartbeat(testCtx(t), &driver.HeartbeatParams{Owner: "w0", TTL: -time.Second,
		Leases: []driver.LeaseRef{{ID: expired[0].ID, Attempt: expired[0].Attempt}}})
	if err != nil || len(hb) != 1 {
		t.Fatalf("Heartbeat = %v, %v", hb, err)
	}
	got := claim(t, d, "w1", 10, time.Minute, true)
	if len(got) != 3 || got[0].ID != expired[0].ID || got[0].Attempt != 2 {
		t.Fatalf("claimed %v, want the expired job first, then the two others", ids(got))
	}
	for _, j := range got {
		if j.TakenOver != (j.ID == expired[0].ID) {
			t.Errorf("job %d: TakenOver = %v, want it set on the expired job only", j.ID, j.TakenOver)
		}
		row := *j
		row.TakenOver = false
		if stored := mustGet(t, d, j.ID); !reflect.DeepEqual(&row, stored) {
			t.Errorf("claim returned\n%+v\nthe database holds\n%+v", j, stored)
		}
	}
	as := attempts(t, d, expired[0].ID)
	if len(as) != 2 || as[0].Outcome != leasehold.OutcomeLeaseExpired || as[0].HeartbeatAt.IsZero() ||
		!as[1].EndedAt.IsZero() {
		t.Errorf("attempts of the job taken over = %+v, want the first ended lease_expired with its heartbeat", as)
	}
}

// TestClaimPlanAfterAnalyze checks that, with statistics that show one
// queue and one priority, the claim still walks leasehold_jobs_ready in
// claim order (queue=? and no sort of the ready jobs) rather than
// skip-scanning the run_at range and sorting every ready job.
func TestClaimPlanAfterAnalyze(t *testing.T) {
	d := openTest(t)
	insertN(t, d, 2000)
	if _, err := d.DB().ExecContext(testCtx(t), "ANALYZE"); err != nil {
		t.Fatal(err)
	}
	for name, query := range map[string]string{"pending": claimSQLPending, "takeover": claimSQLTakeOver} {
		plan := queryPlan(t, d, query, claimPlanArgs(int64(1<<50), 500)...)
		if !strings.Contains(plan, "USING INDEX leasehold_jobs_ready (queue=?)\n") {
			t.Errorf("%s claim: want leasehold_jobs_ready searched by queue in index order, got plan:\n%s", name, plan)
		}
	}
}
