package pgdriver

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	leasehold "github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

func TestClaimRace(t *testing.T) {
	d, _ := newTestDriver(t)
	ctx := testCtx(t)
	const jobs, workers = 300, 8
	insertJobs(t, d, "race", jobs)
	var (
		mu     sync.Mutex
		owners = map[int64]string{}
		dupes  []int64
		wg     sync.WaitGroup
		errs   = make(chan error, workers)
	)
	for w := range workers {
		owner := fmt.Sprintf("worker-%d", w)
		wg.Go(func() {
			for {
				got, err := d.Claim(ctx, &driver.ClaimParams{
					Queue: "race", Kinds: []string{"k"}, Owner: owner, TTL: leaseTTL, Limit: 7, TakeOver: true,
				})
				if err != nil {
					errs <- err
					return
				}
				if len(got) == 0 {
					return
				}
				mu.Lock()
				for _, j := range got {
					if _, ok := owners[j.ID]; ok {
						dupes = append(dupes, j.ID)
					}
					owners[j.ID] = owner
					if j.LeaseOwner != owner || j.Attempt != 1 || j.State != leasehold.StateProcessing {
						errs <- fmt.Errorf("claimed row %+v", j)
					}
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if len(dupes) > 0 || len(owners) != jobs {
		t.Fatalf("claimed %d distinct jobs (want %d), claimed twice: %v", len(owners), jobs, dupes)
	}
	for id, owner := range owners {
		as, err := d.ListAttempts(ctx, id)
		if err != nil || len(as) != 1 || as[0].Owner != owner || as[0].Attempt != 1 {
			t.Fatalf("attempts of %d: %v %+v", id, err, as)
		}
	}
}

func TestClaimOrderKindsAndDelay(t *testing.T) {
	d, _ := newTestDriver(t)
	ctx := testCtx(t)
	ps := []*driver.InsertParams{job("q"), job("q"), job("q"), job("q")}
	ps[1].Priority = -1
	ps[2].Kind = "other"
	ps[3].RunIn = time.Hour
	res, err := d.Insert(ctx, nil, ps)
	if err != nil {
		t.Fatal(err)
	}
	got, err := d.Claim(ctx, &driver.ClaimParams{Queue: "q", Kinds: []string{"k"}, Owner: "w", TTL: leaseTTL, Limit: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != res[1].Job.ID || got[1].ID != res[0].Job.ID {
		t.Fatalf("Claim got %d jobs; want jobs %d then %d", len(got), res[1].Job.ID, res[0].Job.ID)
	}
	if d := got[0].LeaseUntil.Sub(got[0].RunAt); d < leaseTTL-time.Second {
		t.Fatalf("lease_until not now+TTL: %v", got[0].LeaseUntil)
	}
}

func TestClaimTakeOverExpired(t *testing.T) {
	d, _ := newTestDriver(t)
	ctx := testCtx(t)
	insertJobs(t, d, "q", 1)
	first := claimOne(t, d, "q", "old", -time.Second) // already expired
	params := &driver.ClaimParams{Queue: "q", Kinds: []string{"k"}, Owner: "new", TTL: leaseTTL, Limit: 1}
	if got, err := d.Claim(ctx, params); err != nil || len(got) != 0 {
		t.Fatalf("Claim without TakeOver: %d jobs, %v", len(got), err)
	}
	params.TakeOver = true
	got, err := d.Claim(ctx, params)
	if err != nil || len(got) != 1 {
		t.Fatalf("Claim with TakeOver: %d jobs, %v", len(got), err)
	}
	if got[0].ID != first.ID || got[0].Attempt != 2 || got[0].LeaseOwner != "new" {
		t.Fatalf("taken over: %+v", got[0])
	}
	as, err := d.ListAttempts(ctx, first.ID)
	if err != nil || len(as) != 2 {
		t.Fatalf("attempts: %v %+v", err, as)
	}
	if as[0].Outcome != leasehold.OutcomeLeaseExpired || as[0].EndedAt.IsZero() || as[1].Owner != "new" || !as[1].EndedAt.IsZero() {
		t.Fatalf("attempts after takeover: %+v %+v", as[0], as[1])
	}
	// The old owner is fenced out.
	if finish(t, d, nil, &driver.FinishParams{ID: first.ID, Owner: "old", Attempt: 1, Transition: transition(leasehold.OutcomeCompleted, "")}) {
		t.Fatal("old owner's Finish was accepted after takeover")
	}
}

func TestClaimByID(t *testing.T) {
	d, _ := newTestDriver(t)
	ctx := testCtx(t)
	j := insertJobs(t, d, "q", 1)[0]
	p := &driver.ClaimByIDParams{ID: j.ID, Owner: "w", TTL: leaseTTL}
	got, err := d.ClaimByID(ctx, p)
	if err != nil || got == nil || got.Attempt != 1 || got.LeaseOwner != "w" {
		t.Fatalf("ClaimByID: %+v, %v", got, err)
	}
	if got, err := d.ClaimByID(ctx, p); err != nil || got != nil {
		t.Fatalf("ClaimByID of a held job: %+v, %v; want nil, nil", got, err)
	}
	// An expired lease is taken over only with TakeOver.
	expired := insertJobs(t, d, "q", 1)[0]
	p = &driver.ClaimByIDParams{ID: expired.ID, Owner: "old", TTL: -time.Second}
	if got, err := d.ClaimByID(ctx, p); err != nil || got == nil {
		t.Fatalf("ClaimByID: %+v, %v", got, err)
	}
	p.Owner, p.TTL = "new", leaseTTL
	if got, err := d.ClaimByID(ctx, p); err != nil || got != nil {
		t.Fatalf("ClaimByID without TakeOver: %+v, %v", got, err)
	}
	p.TakeOver = true
	if got, err := d.ClaimByID(ctx, p); err != nil || got == nil || got.Attempt != 2 || got.LeaseOwner != "new" {
		t.Fatalf("ClaimByID with TakeOver: %+v, %v", got, err)
	}
	as, err := d.ListAttempts(ctx, expired.ID)
	if err != nil || len(as) != 2 || as[0].Outcome != leasehold.OutcomeLeaseExpired || as[1].Owner != "new" {
		t.Fatalf("attempts after takeover: %+v, %v", as, err)
	}
	p.ID = expired.ID + 1000
	if _, err := d.ClaimByID(ctx, p); !errors.Is(err, leasehold.ErrJobNotFound) {
		t.Fatalf("ClaimByID missing: %v, want ErrJobNotFound", err)
	}
}

func TestHeartbeat(t *testing.T) {
	d, _ := newTestDriver(t)
	ctx := testCtx(t)
	insertJobs(t, d, "q", 2)
	a := claimOne(t, d, "q", "w", time.Second)
	b := claimOne(t, d, "q", "w", time.Second)
	if _, err := d.CancelJob(ctx, b.ID); err != nil {
		t.Fatal(err)
	}
	res, err := d.Heartbeat(ctx, &driver.HeartbeatParams{Owner: "w", TTL: leaseTTL, Leases: []driver.LeaseRef{
		{ID: a.ID, Attempt: a.Attempt}, {ID: b.ID, Attempt: b.Attempt}, {ID: a.ID, Attempt: a.Attempt + 1},
	}})
	if err != nil || len(res) != 2 {
		t.Fatalf("Heartbeat: %+v, %v", res, err)
	}
	for _, r := range res {
		if r.CancelRequested != (r.ID == b.ID) {
			t.Fatalf("heartbeat result %+v", r)
		}
	}
	renewed := getJob(t, d, a.ID)
	if !renewed.LeaseUntil.After(a.LeaseUntil) || renewed.HeartbeatAt.IsZero() {
		t.Fatalf("lease not renewed: %v -> %v", a.LeaseUntil, renewed.LeaseUntil)
	}
	res, err = d.Heartbeat(ctx, &driver.HeartbeatParams{Owner: "intruder", TTL: leaseTTL, Leases: []driver.LeaseRef{{ID: a.ID, Attempt: a.Attempt}}})
	if err != nil || len(res) != 0 {
		t.Fatalf("Heartbeat by another owner: %+v, %v", res, err)
	}
}
