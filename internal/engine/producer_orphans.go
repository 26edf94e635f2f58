package engine

import (
	"context"
	"slices"
	"sync/atomic"
	"time"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/statemachine"
	"github.com/leasehold/leasehold/leasetype"
)

// A claim whose statement committed but whose reply never came back (a
// connection cut after the commit) leaves leases this client's owner
// holds in the database and nobody runs: no heartbeat renews them, and
// once they expire the watcher charges their attempt, failing a job on
// its last attempt, or flagging it stuck, though its handler never ran.
// After a failed claim the queue's loop therefore looks for such leases
// before its next claim and releases them, the attempt not charged
// (OutcomeReleased), fenced as every write is.
//
// A lease of this owner is one of them exactly when it came from a claim
// whose reply this client never read, and the database tells those apart
// by itself: a claim sets lease_until to its statement's now plus the
// client's TTL and heartbeat_at to NULL, and a later claim's now is later.
// So every lease a reply brought has a lease_until at most the largest
// one read in a claim reply of the queue (seen), or a heartbeat_at once
// it was renewed, while a lost reply's leases have a lease_until after
// seen and no heartbeat. The look runs only when no claim of the queue is
// in flight (the loop's own have returned; one beside it is waited for),
// so that no reply on its way is taken for lost; a claim that succeeds
// first raises seen past the lost leases, which are then left to expire:
// the look errs towards leaving a lease, never towards releasing one a
// handler may run. Before the queue's first claim reply there is no seen
// to go by (a process that reused an owner name could find its
// predecessor's leases), and nothing is released.

// OrphanReleaser is what the producer needs of the driver to release the
// leases a lost claim reply left: the processing jobs of an owner, and
// the fenced write (driver.Driver has both).
type OrphanReleaser interface {
	ListJobs(ctx context.Context, p *leasetype.ListParams) ([]*leasetype.JobRow, error)
	Finish(ctx context.Context, tx any, ps []*driver.FinishParams) ([]driver.FinishResult, error)
}

// orphanPage is how many processing jobs one read of the look returns.
const orphanPage = 500

// lostReplyError is the attempt error the release of an orphan records.
const lostReplyError = "the claim's reply was lost; released before any handler started"

// claimMark is what a queue knows of its claims for the look: the largest
// lease_until a claim reply brought, and since when (Clock) a claim may
// have lost its reply, 0 when none has since the last look.
type claimMark struct {
	seen atomic.Int64 // UnixMicro
	lost atomic.Int64
	// armed is set while a wake of the loop for the look is due.
	armed atomic.Bool
}

// replied records the leases of a claim reply.
func (m *claimMark) replied(rows []*leasetype.JobRow) {
	for _, r := range rows {
		u := r.LeaseUntil.UnixMicro()
		for {
			old := m.seen.Load()
			if u <= old || m.seen.CompareAndSwap(old, u) {
				break
			}
		}
	}
}

// failed records a claim that failed at now: its reply may have been lost.
func (m *claimMark) failed(now int64) { m.lost.CompareAndSwap(0, now) }

// orphans returns the rows (processing jobs of this owner) that a lost
// claim reply left: lease_until after seen, never renewed, not held.
func orphans(rows []*leasetype.JobRow, seen int64, held func(id int64, attempt int) bool) []*leasetype.JobRow {
	var out []*leasetype.JobRow
	for _, r := range rows {
		if r.HeartbeatAt.IsZero() && r.LeaseUntil.UnixMicro() > seen && !held(r.ID, r.Attempt) {
			out = append(out, r)
		}
	}
	return out
}

// lookSoon wakes the loop for the look one poll interval from now: a
// queue with no pending job is woken by nothing else, and a database
// that refuses connections must not be asked in a tight loop.
func (q *queue) lookSoon() {
	if q.p.cfg.Orphans == nil || !q.mark.armed.CompareAndSwap(false, true) {
		return
	}
	time.AfterFunc(q.p.cfg.PollInterval, func() {
		q.mark.armed.Store(false)
		q.poke()
	})
}

// releaseLost runs the look after a failed claim, unless a claim beside
// the loop is in flight (it runs at a later wake then). Past the TTL since
// the failure the leases have expired and are the watcher's.
func (q *queue) releaseLost(ctx context.Context) {
	p := q.p
	since := q.mark.lost.Load()
	if since == 0 || p.cfg.Orphans == nil {
		return
	}
	if q.cur.busy() {
		q.lookSoon()
		return
	}
	if q.mark.seen.Load() == 0 {
		q.mark.lost.CompareAndSwap(since, 0)
		return
	}
	if time.Duration(p.cfg.Clock.Now()-since) > p.cfg.TTL {
		q.mark.lost.CompareAndSwap(since, 0)
		return
	}
	n, err := q.releaseOrphans(ctx)
	if err != nil {
		p.cfg.Logger.Warn("leasehold: could not look for leases a lost claim reply left; trying again",
			"queue", q.name, "err", err)
		q.lookSoon()
		return
	}
	q.mark.lost.CompareAndSwap(since, 0)
	if n > 0 {
		p.cfg.Logger.Warn("leasehold: released leases a lost claim reply had taken, their attempt not charged",
			"queue", q.name, "jobs", n)
	}
}

// releaseOrphans releases the queue's orphaned leases and returns how
// many it released, each reported as EventFinished (released, or
// cancelled when its cancel was requested meanwhile), as every outcome
// the client writes is.
func (q *queue) releaseOrphans(ctx context.Context) (int, error) {
	p := q.p
	cctx, cancel := context.WithTimeout(ctx, ClaimTimeout)
	defer cancel()
	seen := q.mark.seen.Load()
	held := func(id int64, attempt int) bool { return p.cfg.Executor.cfg.Leases.Lookup(id, attempt) != nil }
	var found []*leasetype.JobRow
	list := &leasetype.ListParams{States: []leasetype.JobState{leasetype.StateProcessing},
		Queue: q.name, Owner: p.cfg.Owner, Limit: orphanPage}
	for {
		rows, err := p.cfg.Orphans.ListJobs(cctx, list)
		if err != nil {
			return 0, err
		}
		found = append(found, orphans(rows, seen, held)...)
		if len(rows) < orphanPage {
			break
		}
		list.AfterID = rows[len(rows)-1].ID
	}
	if len(found) == 0 {
		return 0, nil
	}
	release := statemachine.Finish(statemachine.Ending{Outcome: leasetype.OutcomeReleased, Error: lostReplyError})
	ps := make([]*driver.FinishParams, len(found))
	for i, r := range found {
		ps[i] = &driver.FinishParams{ID: r.ID, Owner: p.cfg.Owner, Attempt: r.Attempt, Transition: release}
	}
	done, err := p.cfg.Orphans.Finish(cctx, nil, ps)
	for _, ev := range releasedEvents(found, release, done) {
		p.cfg.Emit(ev)
	}
	return len(done), err
}

// releasedEvents returns the EventFinished of each job of found whose
// release (transition release) applied, as done reports them: released,
// or cancelled where a cancel request turned the release into cancelled.
func releasedEvents(found []*leasetype.JobRow, release driver.Transition, done []driver.FinishResult) []leasetype.Event {
	var evs []leasetype.Event
	for _, r := range found {
		i := slices.IndexFunc(done, func(f driver.FinishResult) bool { return f.ID == r.ID })
		switch {
		case i < 0:
		case done[i].Cancelled:
			evs = append(evs, leasetype.Event{Kind: leasetype.EventFinished, Job: r,
				Outcome: release.OutcomeWhenCancelled(), State: leasetype.StateCancelled})
		default:
			evs = append(evs, leasetype.Event{Kind: leasetype.EventFinished, Job: r, Outcome: release.Outcome, State: release.State})
		}
	}
	return evs
}
