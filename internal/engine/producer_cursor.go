package engine

import (
	"sync"
	"time"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/leasetype"
)

// fullClaimShare spaces a queue's full claims: the next one comes no
// sooner than this many times the last one's duration after it started,
// and no later than one poll interval after it ended (fullClaimGap).
const fullClaimShare = 10

// fullClaimGap is how long after the start of a full claim that took
// took the next one is due: fullClaimShare times took, so that full claims
// take at most a tenth of the time, but never more than one poll interval
// after it ended, so that a claim slowed by an outage (a restart, a lost
// connection) does not put off the takeover of expired leases, and of the
// jobs the watcher returned, by ten times the outage.
func fullClaimGap(took, interval time.Duration) time.Duration {
	return min(fullClaimShare*took, took+interval)
}

// slowFullClaim is how long a full claim may take and still run in the
// loop; one slower than that and than twice the last cursor claim (which
// leases as many jobs, so that the time is the scan's, not the work's)
// makes the next run beside it.
const slowFullClaim = 10 * time.Millisecond

// besideShare is the share of the free slots a full claim beside the loop
// may fill (one in besideShare); the loop's cursor claim has the rest.
const besideShare = 10

// claimMode is how a queue's loop runs its next claim.
type claimMode int

const (
	// fullClaim scans from the start of claim order and takes over
	// expired leases, in the loop: before the cursor is set, and while
	// full claims are quick.
	fullClaim claimMode = iota
	// fullClaimBeside is a full claim run beside the loop, into a share
	// of the free slots, while the loop goes on with cursor claims.
	fullClaimBeside
	// cursorClaim starts after the cursor and takes over nothing.
	cursorClaim
)

// cursor lets a queue's claims skip what they already claimed. A claim
// normally scans the queue's pending jobs from the start of claim order
// (a full claim). On PostgreSQL, while a transaction is held open, the
// index entries of every job claimed since it began stay in front of the
// first pending one, and every full claim walks them all: claims slow
// down as the transaction ages. A cursor claim starts after the key of
// the last job the loop claimed (driver.ClaimParams After) and takes over
// no lease, so it costs the same however many such entries there are.
//
// The key is a lower bound of the claimable pending jobs, not of all of
// them: a job inserted later before it (a higher priority, an earlier
// run_at) or returned to pending by the watcher is claimed by the next
// full claim, which also takes over expired leases. A full claim is due
// once the last one started fullClaimShare times its duration ago: at
// once in normal operation, where a full claim takes a millisecond, and
// about once a second when it takes a hundred. A full claim slower than
// slowFullClaim and than twice the last cursor claim makes the next one
// run beside the loop, one at a time, into a tenth of the free slots, so
// that it holds up no cursor claim. A cursor claim that comes back short
// before a full claim is due has the loop woken when it is
// (queue.wakeForFull): a job before the cursor waits for that full claim,
// not for the probe. A full claim beside the loop wakes it when it ends
// only if it filled its limit or a wake-up hint came while it ran
// (queue.claimBeside), so that an idle queue makes no claim by itself.
// docs/design.md, "Claim cursor".
type cursor struct {
	// interval is the poll interval: the longest a full claim waits
	// after the last one ended.
	interval time.Duration
	mu       sync.Mutex
	after    *driver.ClaimKey
	// nextFull is when (Clock) the next full claim is due; slow is set
	// when the last one was slow (see slowFullClaim).
	nextFull int64
	slow     bool
	// backlog is set when the last full claim filled its limit with work
	// that all sorts before the cursor (a dead worker's jobs the watcher
	// returned, leases it took over, jobs inserted ahead): more may wait
	// there, and they come first in claim order. The loop then runs full
	// claims, with every free slot, until one also finds work after the
	// cursor. Otherwise cursor claims would fill the freed slots with
	// newer jobs while a full claim beside the loop, into a tenth of the
	// slots, took the older ones one at a time (seen under load in the
	// chaos harness: orphans claimed a second after newer jobs). One full
	// claim in the loop per such finding at most doubles the time full
	// claims take behind a held transaction.
	backlog bool
	// lastCursor is how long the last cursor claim took.
	lastCursor time.Duration
	// fullBusy is set while a full claim runs beside the loop.
	fullBusy bool
}

// prepare makes p the claim due at now and says how to run it.
func (c *cursor) prepare(p *driver.ClaimParams, now int64) claimMode {
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case c.after == nil, c.backlog && !c.fullBusy:
		return fullClaim
	case now < c.nextFull || c.fullBusy:
	case !c.slow:
		return fullClaim
	default:
		c.fullBusy = true
		return fullClaimBeside
	}
	c.cursorOf(p)
	return cursorClaim
}

// asCursorClaim makes p a cursor claim.
func (c *cursor) asCursorClaim(p *driver.ClaimParams) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.cursorOf(p)
}

func (c *cursor) cursorOf(p *driver.ClaimParams) { p.After, p.TakeOver = c.after, false }

// fullDue returns when (Clock) the next full claim is due.
func (c *cursor) fullDue() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.nextFull
}

// busy reports whether a full claim runs beside the loop.
func (c *cursor) busy() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.fullBusy
}

// fullDone records the end of a full claim run beside the loop.
func (c *cursor) fullDone() {
	c.mu.Lock()
	c.fullBusy = false
	c.mu.Unlock()
}

// claimed moves the cursor after claim p (full or not, sent at sent and
// answered at now) returned rows: forward to the last of the rows that
// came from the pending jobs. A claim that filled its limit while it could
// take over leases mixes in takeovers, whose keys bound nothing: of its
// rows only first attempts, which cannot be takeovers, count.
func (c *cursor) claimed(p *driver.ClaimParams, full bool, rows []*leasetype.JobRow, sent, now int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	took := time.Duration(now - sent)
	if full {
		c.nextFull = sent + int64(fullClaimGap(took, c.interval))
		c.backlog = len(rows) == p.Limit && c.allBehind(rows)
		if len(rows) == p.Limit && c.behind(rows) {
			// It filled its limit and found work before the cursor (jobs
			// the watcher returned, leases it took over): more may wait
			// there, and the next full claim is due at once, not after
			// the gap, which would hold back the n-th such job n gaps.
			c.nextFull = now
		}
		c.slow = took > slowFullClaim && took > 2*c.lastCursor
	} else {
		c.lastCursor = took
	}
	mixed := p.TakeOver && len(rows) == p.Limit
	var (
		last  driver.ClaimKey
		moved bool
	)
	for _, row := range rows {
		if mixed && row.Attempt != 1 {
			continue
		}
		if k := driver.KeyOf(row); !moved || last.Less(k) {
			last, moved = k, true
		}
	}
	if moved && (c.after == nil || c.after.Less(last)) {
		c.after = &last // one allocation per claim, not one per job
	}
}

// allBehind reports whether every row of rows, at least one, sorts before
// the cursor.
func (c *cursor) allBehind(rows []*leasetype.JobRow) bool {
	if c.after == nil || len(rows) == 0 {
		return false
	}
	for _, row := range rows {
		if !driver.KeyOf(row).Less(*c.after) {
			return false
		}
	}
	return true
}

// behind reports whether a row of rows sorts before the cursor: a job
// only a full claim finds.
func (c *cursor) behind(rows []*leasetype.JobRow) bool {
	if c.after == nil {
		return false
	}
	for _, row := range rows {
		if driver.KeyOf(row).Less(*c.after) {
			return true
		}
	}
	return false
}
