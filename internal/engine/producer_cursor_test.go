package engine

import (
	"testing"
	"time"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/leasetype"
)

func cursorRow(id int64, attempt int) *leasetype.JobRow {
	return &leasetype.JobRow{ID: id, Attempt: attempt, RunAt: time.Unix(1000, 0)}
}

// prepareClaim prepares a claim of up to limit jobs on c at now and
// requires mode want: After set exactly for a cursor claim, and takeovers
// exactly without it.
func prepareClaim(t *testing.T, c *cursor, limit int, now int64, want claimMode) *driver.ClaimParams {
	t.Helper()
	ms := int64(time.Millisecond)
	p := &driver.ClaimParams{Limit: limit, TakeOver: true}
	if got := c.prepare(p, now); got != want {
		t.Fatalf("claim at %d ms: mode %d, want %d", now/ms, got, want)
	}
	if cur := p.After != nil; cur != (want == cursorClaim) || p.TakeOver == cur {
		t.Fatalf("claim at %d ms (mode %d): after %+v, takeover %v", now/ms, want, p.After, p.TakeOver)
	}
	return p
}

// TestCursorClaims checks when a queue's claims start after its cursor,
// and where the cursor moves: a full claim in the loop while it is unset;
// a full claim whenever the last one started fullClaimShare times its
// duration ago, in the loop when that one was quick and beside it (one at
// a time) when it was slow; cursor claims (After set, no takeover)
// otherwise; the cursor only forward, and never to the
// key of a row that may be a takeover.
func TestCursorClaims(t *testing.T) {
	c := cursor{interval: time.Second}
	ms := int64(time.Millisecond)
	claim := func(now int64, want claimMode) *driver.ClaimParams {
		t.Helper()
		return prepareClaim(t, &c, 3, now, want)
	}

	p := claim(0, fullClaim)
	// A full batch that may hold takeovers: only the first attempts count.
	c.claimed(p, true, []*leasetype.JobRow{cursorRow(5, 1), cursorRow(9, 2), cursorRow(7, 1)}, 0, 10*ms)
	if c.after == nil || c.after.ID != 7 {
		t.Fatalf("after a full batch with a possible takeover: cursor %+v, want id 7", c.after)
	}

	p = claim(50*ms, cursorClaim)
	if p.After.ID != 7 {
		t.Fatalf("cursor claim after %+v, want id 7", p.After)
	}
	// A cursor claim takes over nothing: every row counts.
	c.claimed(p, false, []*leasetype.JobRow{cursorRow(8, 1), cursorRow(12, 3)}, 50*ms, 51*ms)
	if c.after.ID != 12 {
		t.Fatalf("after a cursor claim: cursor %+v, want id 12", c.after)
	}

	// The last full claim took 10 ms: the next, due at 100 ms, runs in
	// the loop.
	p = claim(100*ms, fullClaim)
	// A short full claim got every claimable job; the cursor does not go
	// back to the job before it that it found. It took 50 ms: slow.
	c.claimed(p, true, []*leasetype.JobRow{cursorRow(3, 1)}, 100*ms, 150*ms)
	if c.after.ID != 12 {
		t.Fatalf("after a short full claim of an earlier job: cursor %+v, want id 12 still", c.after)
	}
	claim(599*ms, cursorClaim)
	p = claim(600*ms, fullClaimBeside)
	claim(601*ms, cursorClaim) // one full claim at a time
	c.claimed(p, true, nil, 600*ms, 601*ms)
	c.fullDone()
	claim(609*ms, cursorClaim)
	p = claim(610*ms, fullClaim) // quick again: back in the loop
	// A cursor claim of 30 ms: a full claim of 40 ms is its work, not a
	// scan of dead entries, and the next stays in the loop.
	c.claimed(&driver.ClaimParams{Limit: 3}, false, nil, 611*ms, 641*ms)
	c.claimed(p, true, nil, 650*ms, 690*ms)
	claim(1050*ms, fullClaim)
	// A full claim held up 2 s by an outage: the next is due one poll
	// interval after it ended, not 20 s after it started.
	c.claimed(p, true, nil, 2000*ms, 4000*ms)
	claim(4999*ms, cursorClaim)
	claim(5000*ms, fullClaimBeside)
}

// TestCursorFullClaimBehindDueAtOnce checks that a full claim that filled
// its limit with jobs before the cursor only (ones the watcher returned)
// makes the next full claim due at once and run in the loop with every
// free slot, even when full claims are slow, until one finds work after
// the cursor too; while one that did not fill its limit, or found nothing
// before the cursor, keeps the gap: the jobs a dead worker held, returned
// together, are claimed one full claim after the other, not one gap after
// the other, nor after newer jobs.
func TestCursorFullClaimBehindDueAtOnce(t *testing.T) {
	c := cursor{interval: time.Second}
	ms := int64(time.Millisecond)
	claim := func(now int64, want claimMode) *driver.ClaimParams {
		t.Helper()
		return prepareClaim(t, &c, 1, now, want)
	}
	done := func(p *driver.ClaimParams, sent, now int64, rows ...*leasetype.JobRow) {
		c.claimed(p, true, rows, sent, now)
		c.fullDone()
	}
	// A slow first claim sets the cursor at id 10; the next full claim is
	// due 10 x 50 ms after it started.
	done(claim(0, fullClaim), 0, 50*ms, cursorRow(10, 1))
	claim(499*ms, cursorClaim)
	// It fills its limit with job 3, returned by the watcher, all of it
	// before the cursor: the next is due when it ends, in the loop with
	// every free slot however slow full claims are, and so is the one
	// after while they keep finding only such jobs.
	done(claim(500*ms, fullClaimBeside), 500*ms, 550*ms, cursorRow(3, 2))
	p := claim(550*ms, fullClaim)
	done(p, 550*ms, 570*ms, cursorRow(5, 2))
	p = claim(570*ms, fullClaim)
	// Job 6 before the cursor and job 11 after it: the backlog is worked
	// off; the limit was filled with a job before the cursor, so the next
	// full claim is due at once, but beside the loop again.
	p.Limit = 2
	done(p, 570*ms, 620*ms, cursorRow(6, 2), cursorRow(11, 1))
	p = claim(621*ms, fullClaimBeside)
	// Job 12, after the cursor: the gap again.
	done(p, 621*ms, 671*ms, cursorRow(12, 1))
	claim(672*ms, cursorClaim)
	claim(1120*ms, cursorClaim)
	// Job 4, before the cursor, with a slot to spare: the last such job.
	p = claim(1121*ms, fullClaimBeside)
	p.Limit = 2
	done(p, 1121*ms, 1171*ms, cursorRow(4, 2))
	claim(1172*ms, cursorClaim)
	claim(1621*ms, fullClaimBeside)
}
