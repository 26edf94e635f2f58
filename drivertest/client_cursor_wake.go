package drivertest

import (
	"context"
	"time"

	"github.com/leasehold/leasehold"
)

// cursorWakePoll is the poll interval of the tests below: long enough that
// a job claimed only once the probe names its queue starts far too late.
const cursorWakePoll = 5 * time.Second

// cursorWakeBound is how soon the jobs of the tests below must start: a
// small share of cursorWakePoll, and several times what a full claim
// (fullClaimDelay) and the gap after it take.
const cursorWakeBound = 2500 * time.Millisecond

// followUps is how many jobs the chain of testFollowUpsAfterLowPriorityJob
// holds: each handler but the last inserts the next.
const followUps = 6

// testFollowUpsAfterLowPriorityJob: once a job of a low priority (a high
// number) has run, jobs of the default priority are still claimed as soon
// as they are inserted, each follow-up inserted by the handler of the job
// before it: the queue's cursor, left at the low-priority job's key, must
// not hide them until the probe (docs/design.md, "Claim cursor").
func testFollowUpsAfterLowPriorityJob(e *clientEnv) {
	started := make(chan time.Time, followUps+1)
	var c *leasehold.Client
	c = e.newClient(e.d, e.workers(func(ctx context.Context, job *leasehold.Job[testArgs]) error {
		started <- time.Now()
		if job.Args.N > 0 && job.Args.N < followUps {
			if _, err := c.Insert(ctx, testArgs{N: job.Args.N + 1}, nil); err != nil {
				return err
			}
		}
		return nil
	}), func(cfg *leasehold.Config) { cfg.PollInterval = cursorWakePoll })
	res, err := c.Insert(e.ctx, testArgs{N: 0}, &leasehold.InsertOpts{Priority: 5})
	if err != nil {
		e.Fatalf("Insert: %v", err)
	}
	e.waitState(res.Job.ID, leasehold.StateCompleted, 30*time.Second)
	<-started
	// Past the gap after the full claim that took it: the first job of
	// the chain is claimed by a full claim.
	time.Sleep(100 * time.Millisecond)
	if _, err := c.Insert(e.ctx, testArgs{N: 1}, nil); err != nil {
		e.Fatalf("Insert: %v", err)
	}
	prev := e.startedWithin(started, 30*time.Second, "the first job of the chain")
	for n := 2; n <= followUps; n++ {
		at := e.startedWithin(started, cursorWakeBound, "a follow-up job")
		if gap := at.Sub(prev); gap > cursorWakeBound {
			e.Fatalf("follow-up %d started %v after the job before it, want under %v (poll interval %v)",
				n, gap, cursorWakeBound, cursorWakePoll)
		}
		prev = at
	}
}

// testJobBeforeCursorClaimedAtFullClaim: a job inserted ahead of the
// queue's cursor right after a full claim, so that the wake of its insert
// runs a cursor claim that cannot see it (on PostgreSQL), is claimed when
// the next full claim is due, about ten times a full claim's duration
// later, not when the probe next names the queue, a poll interval later.
func testJobBeforeCursorClaimedAtFullClaim(e *clientEnv) {
	d := &slowFullClaims{Driver: e.d}
	urgent := make(chan time.Time, 1)
	started := make(chan time.Time, 2)
	var c *leasehold.Client
	c = e.newClient(d, e.workers(func(ctx context.Context, job *leasehold.Job[testArgs]) error {
		started <- time.Now()
		if job.Args.N == 0 {
			// Inside the gap after the slow full claim that took this job.
			urgent <- time.Now()
			_, err := c.Insert(ctx, testArgs{N: 1}, &leasehold.InsertOpts{Priority: 1})
			return err
		}
		return nil
	}), func(cfg *leasehold.Config) { cfg.PollInterval = cursorWakePoll })
	if _, err := c.Insert(e.ctx, testArgs{N: 0}, &leasehold.InsertOpts{Priority: 5}); err != nil {
		e.Fatalf("Insert: %v", err)
	}
	e.startedWithin(started, 30*time.Second, "the first job")
	inserted := e.startedWithin(urgent, 30*time.Second, "the insert of the urgent job")
	// The next full claim is due at most 10 x fullClaimDelay after the
	// first began, and takes fullClaimDelay.
	at := e.startedWithin(started, cursorWakeBound, "the urgent job")
	if wait := at.Sub(inserted); wait > cursorWakeBound {
		e.Fatalf("urgent job started %v after its insert, want under %v (poll interval %v)",
			wait, cursorWakeBound, cursorWakePoll)
	}
}

// startedWithin returns the next time received on ch, failing the test
// when none comes within timeout.
func (e *clientEnv) startedWithin(ch <-chan time.Time, timeout time.Duration, what string) time.Time {
	e.Helper()
	select {
	case at := <-ch:
		return at
	case <-time.After(timeout):
		e.Fatalf("%s did not start within %v (poll interval %v)", what, timeout, cursorWakePoll)
		return time.Time{}
	}
}
