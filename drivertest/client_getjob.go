package drivertest

import (
	"context"
	"sync"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// beatBeforeAttempts renews one lease just before the first
// ListAttempts: a heartbeat between Client.GetJob's read of the job and
// its read of the history.
type beatBeforeAttempts struct {
	driver.Driver
	owner string
	lease driver.LeaseRef
	once  sync.Once
	err   error
}

func (b *beatBeforeAttempts) ListAttempts(ctx context.Context, id int64) ([]*leasehold.Attempt, error) {
	b.once.Do(func() {
		time.Sleep(5 * time.Millisecond) // a later heartbeat_at on the millisecond clock too
		_, b.err = b.Driver.Heartbeat(ctx, &driver.HeartbeatParams{Owner: b.owner, TTL: time.Minute,
			Leases: []driver.LeaseRef{b.lease}})
	})
	return b.Driver.ListAttempts(ctx, id)
}

// testGetJobShowsOneLease: a heartbeat between the two reads of
// Client.GetJob does not make the job's lease and its running attempt
// show different heartbeats (`leasehold jobs show` printed both).
func testGetJobShowsOneLease(e *clientEnv) {
	id := e.insertArgs(e.newClient(e.d, nil, nil), 1)
	jobs, err := e.d.Claim(e.ctx, &driver.ClaimParams{Queue: leasehold.DefaultQueue, Kinds: []string{testArgs{}.Kind()},
		Owner: "w", TTL: time.Minute, Limit: 1})
	if err != nil || len(jobs) != 1 || jobs[0].ID != id {
		e.Fatalf("Claim: %v, %v", jobs, err)
	}
	bd := &beatBeforeAttempts{Driver: e.d, owner: "w", lease: driver.LeaseRef{ID: id, Attempt: jobs[0].Attempt}}
	info, err := e.newClient(bd, nil, nil).GetJob(e.ctx, id)
	if err != nil || bd.err != nil {
		e.Fatalf("GetJob: %v (heartbeat between its reads: %v)", err, bd.err)
	}
	last := info.Attempts[len(info.Attempts)-1]
	if info.HeartbeatAt.IsZero() || !last.HeartbeatAt.Equal(info.HeartbeatAt) || last.Outcome != leasehold.OutcomeRunning {
		e.Fatalf("GetJob: lease heartbeat %v, running attempt %+v; want one heartbeat, after the renewal", info.HeartbeatAt, last)
	}
}
