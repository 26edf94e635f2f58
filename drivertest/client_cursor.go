package drivertest

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// slowFullClaims wraps a driver so that every full claim (no After) takes
// at least fullClaimDelay: the client's full claims then come about ten
// times that apart, and its claims in between start after its cursor.
type slowFullClaims struct {
	driver.Driver
	cursorClaims atomic.Int64
}

const fullClaimDelay = 100 * time.Millisecond

// Claim delays full claims, counts the others, and forwards.
func (s *slowFullClaims) Claim(ctx context.Context, p *driver.ClaimParams) ([]*leasehold.JobRow, error) {
	if p.After == nil {
		time.Sleep(fullClaimDelay)
	} else {
		s.cursorClaims.Add(1)
	}
	return s.Driver.Claim(ctx, p)
}

// testJobBeforeCursorClaimed: a job inserted after the queue's cursor
// has moved past its place in claim order (a higher priority than the job
// just run) is still claimed: the claims after the cursor do not see it on
// PostgreSQL, the next full claim does.
func testJobBeforeCursorClaimed(e *clientEnv) {
	d := &slowFullClaims{Driver: e.d}
	ran := make(chan int64, 2)
	c := e.newClient(d, e.workers(func(_ context.Context, job *leasehold.Job[testArgs]) error {
		ran <- job.ID
		return nil
	}), func(c *leasehold.Config) { c.PollInterval = 50 * time.Millisecond })
	first := e.insertOpts(c, &leasehold.InsertOpts{Priority: 5})
	e.waitState(first, leasehold.StateCompleted, 30*time.Second)
	<-ran
	urgent := e.insertOpts(c, &leasehold.InsertOpts{Priority: 1})
	e.waitState(urgent, leasehold.StateCompleted, 30*time.Second)
	if got := <-ran; got != urgent {
		e.Fatalf("ran job %d, want %d", got, urgent)
	}
	if d.cursorClaims.Load() == 0 {
		e.Fatalf("no claim after the cursor within %v of a full claim", 10*fullClaimDelay)
	}
}
