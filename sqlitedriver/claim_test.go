package sqlitedriver

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/testdb"
)

func TestClaimOrderAndFields(t *testing.T) {
	d := openTest(t)
	ctx := testCtx(t)
	ps := []*driver.InsertParams{job(`{"n":0}`), job(`{"n":1}`), job(`{"n":2}`), job(`{"n":3}`)}
	ps[1].Priority = -1
	ps[2].RunIn = time.Hour // not ready
	ps[3].Kind = "other"    // no handler
	ins := insert(t, d, ps...)
	now, err := d.Now(ctx)
	if err != nil {
		t.Fatal(err)
	}
	got := claim(t, d, "w1", 10, time.Minute, false)
	if len(got) != 2 || got[0].ID != ins[1].ID || got[1].ID != ins[0].ID {
		t.Fatalf("claimed %v, want jobs %d then %d", ids(got), ins[1].ID, ins[0].ID)
	}
	j := got[0]
	if j.State != leasehold.StateProcessing || j.Attempt != 1 || j.LeaseOwner != "w1" ||
		!j.HeartbeatAt.IsZero() {
		t.Errorf("claimed job = %+v", j)
	}
	if d := j.LeaseUntil.Sub(now); d < 59*time.Second || d > 61*time.Second {
		t.Errorf("lease_until - now = %v, want about 1m", d)
	}
	as := attempts(t, d, j.ID)
	if len(as) != 1 || as[0].Attempt != 1 || as[0].Owner != "w1" || !as[0].EndedAt.IsZero() ||
		as[0].Outcome != leasehold.OutcomeRunning || as[0].ClaimedAt.IsZero() {
		t.Errorf("attempts = %+v", as)
	}
	if more := claim(t, d, "w2", 10, time.Minute, true); len(more) != 0 {
		t.Errorf("second claim got %v, want none (live leases)", ids(more))
	}
}

func TestClaimTakeOver(t *testing.T) {
	d := openTest(t)
	ins := insert(t, d, job(`{}`))[0]
	// A negative TTL makes the lease expired at once by the database clock.
	first := claim(t, d, "w1", 1, -time.Second, false)
	if len(first) != 1 {
		t.Fatalf("claimed %d", len(first))
	}
	if got := claim(t, d, "w2", 1, time.Minute, false); len(got) != 0 {
		t.Fatalf("claim without TakeOver took an expired lease")
	}
	got := claim(t, d, "w2", 1, time.Minute, true)
	if len(got) != 1 || got[0].ID != ins.ID || got[0].Attempt != 2 || got[0].LeaseOwner != "w2" {
		t.Fatalf("takeover = %+v", got)
	}
	as := attempts(t, d, ins.ID)
	if len(as) != 2 || as[0].Outcome != leasehold.OutcomeLeaseExpired || as[0].EndedAt.IsZero() ||
		as[1].Owner != "w2" || !as[1].EndedAt.IsZero() {
		t.Errorf("attempts after takeover = %+v %+v", as[0], as[1])
	}
	if finishOne(t, d, nil, &driver.FinishParams{ID: ins.ID, Owner: "w1", Attempt: 1,
		Transition: transition(leasehold.OutcomeCompleted, "")}) {
		t.Error("old owner's completion accepted after takeover")
	}
}

func TestClaimByID(t *testing.T) {
	d := openTest(t)
	ctx := testCtx(t)
	ready := insert(t, d, job(`{}`))[0]
	later := job(`{}`)
	later.RunIn = time.Hour
	future := insert(t, d, later)[0]
	p := &driver.ClaimByIDParams{ID: ready.ID, Owner: "w", TTL: time.Minute}
	j, err := d.ClaimByID(ctx, p)
	if err != nil || j == nil || j.Attempt != 1 || j.LeaseOwner != "w" {
		t.Fatalf("ClaimByID = %+v, %v", j, err)
	}
	if j, err := d.ClaimByID(ctx, p); err != nil || j != nil {
		t.Errorf("ClaimByID of a held job = %+v, %v; want nil, nil", j, err)
	}
	p.ID = future.ID
	if j, err := d.ClaimByID(ctx, p); err != nil || j != nil {
		t.Errorf("ClaimByID of a future job = %+v, %v; want nil, nil", j, err)
	}
	p.ID = 999999
	if _, err := d.ClaimByID(ctx, p); !errors.Is(err, leasehold.ErrJobNotFound) {
		t.Errorf("ClaimByID missing: %v, want ErrJobNotFound", err)
	}
	if n := len(attempts(t, d, ready.ID)); n != 1 {
		t.Errorf("%d attempts, want 1", n)
	}
}

// TestRacingClaimsTwoDrivers races claimers on two Drivers (two connections,
// as two processes would have) on one file: each job is claimed exactly once.
func TestRacingClaimsTwoDrivers(t *testing.T) {
	path := testdb.SQLitePath(t)
	a, b := openPath(t, path), openPath(t, path)
	const jobs = 400
	insertN(t, a, jobs)
	var (
		mu      sync.Mutex
		claimed = make(map[int64]string)
		wg      sync.WaitGroup
		start   = make(chan struct{})
	)
	for i, d := range []*Driver{a, b, a, b} {
		owner := fmt.Sprintf("w%d", i)
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			for {
				got, err := d.Claim(testCtx(t), &driver.ClaimParams{Queue: "q",
					Kinds: []string{"k"}, Owner: owner, TTL: time.Minute, Limit: 7})
				if err != nil {
					t.Errorf("Claim: %v", err)
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, j := range got {
					if prev, dup := claimed[j.ID]; dup {
						t.Errorf("job %d claimed by %s and %s", j.ID, prev, owner)
					}
					claimed[j.ID] = owner
					if j.LeaseOwner != owner || j.Attempt != 1 {
						t.Errorf("job %d: owner %q attempt %d", j.ID, j.LeaseOwner, j.Attempt)
					}
				}
				mu.Unlock()
			}
		}()
	}
	close(start)
	wg.Wait()
	if len(claimed) != jobs {
		t.Fatalf("claimed %d distinct jobs, want %d", len(claimed), jobs)
	}
	owners := map[string]int{}
	for _, o := range claimed {
		owners[o]++
	}
	t.Logf("claims per owner: %v", owners)
}

func ids(jobs []*leasehold.JobRow) []int64 {
	out := make([]int64, len(jobs))
	for i, j := range jobs {
		out[i] = j.ID
	}
	return out
}
