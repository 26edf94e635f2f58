package pgdriver

import (
	"sync"
	"testing"
	"time"

	leasehold "github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/statemachine"
)

// TestRescueStalledWatcherLetsGo stalls a watcher inside its rescue
// transaction, between reading the expired jobs and writing them: the job
// stays locked (another watcher skips it) only until rescueIdleTimeout,
// when the server ends the stalled transaction and another watcher takes
// the job while the first is still stalled; the first one's late write
// then fails and the job's history ends once.
func TestRescueStalledWatcherLetsGo(t *testing.T) {
	d, _ := newTestDriver(t)
	ctx := testCtx(t)
	res, err := d.Insert(ctx, nil, []*driver.InsertParams{job("q")})
	if err != nil {
		t.Fatal(err)
	}
	id := res[0].Job.ID
	if got, err := d.ClaimByID(ctx, &driver.ClaimByIDParams{ID: id, Owner: "gone", TTL: -time.Second}); err != nil || got == nil {
		t.Fatalf("ClaimByID: %v", err)
	}
	held, resume := make(chan struct{}), make(chan struct{})
	var once sync.Once
	release := sync.OnceFunc(func() { close(resume) })
	t.Cleanup(release) // on a failure below: let the stalled watcher go
	stalled := func(j *leasehold.JobRow) driver.Transition {
		once.Do(func() { close(held) })
		<-resume
		return statemachine.Rescue(j, false)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := d.RescueExpired(ctx, &driver.RescueParams{Decide: stalled})
		errc <- err
	}()
	<-held
	rescuer := &driver.RescueParams{Decide: statemachine.Rescuer(nil)}
	if got, err := d.RescueExpired(ctx, rescuer); err != nil || len(got) != 0 {
		t.Fatalf("RescueExpired beside the stalled one: %+v, %v; want nothing (the job is locked)", got, err)
	}
	deadline := time.Now().Add(rescueIdleTimeout + 10*time.Second)
	for {
		got, err := d.RescueExpired(ctx, rescuer)
		if err != nil {
			t.Fatalf("RescueExpired: %v", err)
		}
		if len(got) == 1 && got[0].ID == id {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the stalled watcher still holds job %d after %s", id, rescueIdleTimeout+10*time.Second)
		}
		time.Sleep(50 * time.Millisecond)
	}
	release()
	if err := <-errc; err == nil {
		t.Fatal("the stalled watcher's rescue committed after another took the job")
	}
	if j := getJob(t, d, id); j.State != leasehold.StatePending {
		t.Fatalf("job after the rescue: %+v", j)
	}
	if as, err := d.ListAttempts(ctx, id); err != nil || len(as) != 1 || as[0].Outcome != leasehold.OutcomeLeaseExpired {
		t.Fatalf("attempts: %+v, %v; want one, ended lease_expired", as, err)
	}
}
