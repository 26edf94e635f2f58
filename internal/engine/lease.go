package engine

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"sync/atomic"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/leasetype"
)

// Causes of a lease's context ending, besides ErrLeaseLost and
// ErrJobCancelled.
var (
	// ErrShutdown is the cause of handler contexts cancelled by Stop.
	ErrShutdown = leasetype.ErrShuttingDown
	// errHandlerDone is the cause set once the handler has returned.
	errHandlerDone = errors.New("leasehold: handler returned")
	// errNotStarted is the cause set on the context of a job whose
	// handler was not started because its lease could no longer be relied
	// on.
	errNotStarted = errors.New("leasehold: lease past its safe window; handler not started")
)

type leaseKey struct{}

// leaseValue is the parent of a handler's context: the client's base
// context with the lease under leaseKey. It lives inside the Lease, so
// the claim of a job allocates no separate context.WithValue for it.
type leaseValue struct {
	context.Context
	l *Lease
}

// Value implements context.Context.
func (v *leaseValue) Value(key any) any {
	if key == (leaseKey{}) {
		return v.l
	}
	return v.Context.Value(key)
}

// Lease is one lease held by a client, from its claim until its outcome is
// written or given up.
type Lease struct {
	// Row is the job as claimed. Nothing changes it after the claim.
	Row    *leasetype.JobRow
	ctx    context.Context
	cancel context.CancelCauseFunc
	value  leaseValue // ctx's parent
	window *Window
	// renewedAt is the Clock reading at which the last successful claim or
	// renewal of this lease was sent.
	renewedAt atomic.Int64
	// finalized is set by whoever submits the lease's outcome: the
	// executor or Stop. Only one of them does.
	finalized atomic.Bool
	// returned is set once the handler has returned (see MarkReturned),
	// which is before finalized: the outcome is decided after the handler's
	// own deferred work.
	returned atomic.Bool
	// started is set on the pool goroutine just before the lease's last
	// check ahead of its handler: once it is set, the handler may be
	// running (see Executor.release).
	started atomic.Bool
	// startedAt is the Clock reading at which the handler was called, zero
	// until then (no reading is zero: the clock starts before any claim).
	// Stop's release of a handler it cut off reports how long that handler
	// ran (see Executor.ranSoFar).
	startedAt atomic.Int64
	// lostInDB: a heartbeat found the lease gone from the database, or a
	// CompleteTx was refused.
	lostInDB atomic.Bool
	// refused: a CompleteTx was refused (MarkLost), and reported so.
	refused atomic.Bool
	// expiredLocally: the lease was not renewed in time and the worker
	// gave it up on its own clock.
	expiredLocally atomic.Bool
	// endedBy is who ended the lease first (see end): endOpen until then.
	endedBy atomic.Int32
	// completedInTx: the handler completed the job with CompleteTx.
	completedInTx atomic.Bool
	// completedTx is the transaction of the latest successful CompleteTx.
	completedTx atomic.Pointer[callerTx]
	// fin is the lease's outcome once submitted (see finish).
	fin finishItem
	// claimSent is the Clock reading at which the claim was sent.
	claimSent int64
	// slot is the producer's queue whose worker slot the lease holds.
	slot *queue
}

// Context returns the handler's context: it carries the lease (see
// FromContext) and ends when the lease is lost, the job is cancelled or
// the client stops.
func (l *Lease) Context() context.Context { return l.ctx }

// Ref is the lease's fencing token. The lease set is keyed by it, not by
// job id: after losing a lease, the same client may claim the job again
// while the old handler is still winding down.
func (l *Lease) Ref() driver.LeaseRef { return driver.LeaseRef{ID: l.Row.ID, Attempt: l.Row.Attempt} }

// FromContext returns the lease whose handler received ctx, or nil.
func FromContext(ctx context.Context) *Lease {
	l, _ := ctx.Value(leaseKey{}).(*Lease)
	return l
}

// Usable returns nil while the client may still act on the lease, and an
// error wrapping ErrLeaseLost once it was given up, found lost, or its safe
// window has passed on the client's clock.
func (l *Lease) Usable() error {
	lost := func(why string, args ...any) error {
		return fmt.Errorf("%w: job %d attempt %d: %s", leasetype.ErrLeaseLost, l.Row.ID, l.Row.Attempt, fmt.Sprintf(why, args...))
	}
	switch {
	case l.finalized.Load() || l.returned.Load():
		return lost("lease given up (handler returned or client stopping)")
	case l.lostInDB.Load():
		return lost("lease taken over")
	case errors.Is(context.Cause(l.ctx), leasetype.ErrLeaseLost):
		return lost("lease not renewed in time")
	}
	if late := l.window.Overdue(l, l.window.Clock.Now()); late >= 0 {
		return lost("safe window passed %v ago", late)
	}
	return nil
}

// Who ended a lease first (Lease.end).
const (
	endOpen    int32 = iota
	endLost          // a heartbeat found it gone from the database
	endExpired       // the watchdog gave it up, not renewed in time
	endDone          // its handler returned or was not started, or Stop released it
)

// end claims the ending of the lease for by, and reports whether by is
// the first to end it: only the first reports a lost lease and cancels
// the handler with its cause, so that one lease found lost by a heartbeat
// and given up by the watchdog at once makes one EventLeaseLost, not two,
// and none once its handler has returned. Whoever calls it stores the
// first one's flag (lostInDB, expiredLocally) before it returns, so that
// a caller that came second and reads the flags (decide) sees it even
// when the first has not stored it yet.
func (l *Lease) end(by int32) bool {
	won := l.endedBy.CompareAndSwap(endOpen, by)
	switch l.endedBy.Load() {
	case endLost:
		l.lostInDB.Store(true)
	case endExpired:
		l.expiredLocally.Store(true)
	}
	return won
}

// MarkReturned records that the lease's handler has returned: from then
// on Usable refuses the lease, even before its outcome is submitted. The
// client calls it on the handler's goroutine, once the handler is done,
// before it reports what the handler left waiting for its return.
func (l *Lease) MarkReturned() { l.returned.Store(true) }

// Returned reports whether MarkReturned was called.
func (l *Lease) Returned() bool { return l.returned.Load() }

// MarkLost records that the database refused a write for the lease, a
// refusal the caller reported: there is nothing more to write for it.
func (l *Lease) MarkLost() {
	l.refused.Store(true)
	l.lostInDB.Store(true)
}

// callerTx is the identity of a caller's transaction (see txIdentity).
type callerTx struct{ id any }

// txIdentity returns a comparable identity for a caller's transaction, so
// that two calls can tell whether they were given the same one; ok is
// false when tx's type is not a pointer (then calls cannot be matched).
func txIdentity(tx any) (id any, ok bool) {
	if reflect.ValueOf(tx).Kind() != reflect.Pointer {
		return nil, false
	}
	return tx, true
}

// CompletedIn reports whether a CompleteTx of the lease already succeeded
// in tx.
func (l *Lease) CompletedIn(tx any) bool {
	id, ok := txIdentity(tx)
	last := l.completedTx.Load()
	return ok && last != nil && last.id == id
}

// MarkCompletedIn records that a CompleteTx of the lease succeeded in tx.
// The reference keeps tx alive, so a later transaction cannot share its
// identity.
func (l *Lease) MarkCompletedIn(tx any) {
	l.completedInTx.Store(true)
	if id, ok := txIdentity(tx); ok {
		l.completedTx.Store(&callerTx{id: id})
	}
}

// Leases is the set of leases a client holds: every lease from its claim
// until its outcome is written, so the heartbeater keeps renewing a lease
// whose outcome waits for a busy database.
type Leases struct {
	mu sync.Mutex
	m  map[driver.LeaseRef]*Lease
}

// NewLeases returns an empty set.
func NewLeases() *Leases { return &Leases{m: map[driver.LeaseRef]*Lease{}} }

// add adds l unless the set holds a lease of the same job and attempt
// already, which it then returns (and leaves in place).
func (s *Leases) add(l *Lease) (held *Lease) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if held = s.m[l.Ref()]; held == nil {
		s.m[l.Ref()] = l
	}
	return held
}

// forget drops a lease once nothing more will be written for it: it is no
// longer renewed.
func (s *Leases) forget(l *Lease) {
	s.mu.Lock()
	delete(s.m, l.Ref())
	s.mu.Unlock()
}

// Snapshot returns the leases held now.
func (s *Leases) Snapshot() []*Lease {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*Lease, 0, len(s.m))
	for _, l := range s.m {
		out = append(out, l)
	}
	return out
}

// Held returns the job ids of the leases the client still answers for:
// every lease in the set (from its claim until its outcome is written)
// but those the watchdog gave up, whose handler runs on past its safe
// window and whose job the queue's policy now decides. The client's
// watcher leaves the held leases alone even once expired
// (driver.RescueParams.Held): after the database was out of reach for
// longer than the TTL, an outcome that waits in the completer is written
// when the database is back, and the job does not run a second time in
// the same process. (A claim never takes over a lease of its own owner.)
func (s *Leases) Held() []int64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]int64, 0, len(s.m))
	for ref, l := range s.m {
		if !l.expiredLocally.Load() {
			ids = append(ids, ref.ID)
		}
	}
	return ids
}

// Lookup returns the lease (id, attempt), or nil.
func (s *Leases) Lookup(id int64, attempt int) *Lease {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.m[driver.LeaseRef{ID: id, Attempt: attempt}]
}

// Len returns how many leases the set holds.
func (s *Leases) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.m)
}

// errNotRenewed is the Err of the EventLeaseLost of a lease the watchdog
// gave up, and the cause of its handler's context: ErrLeaseNotRenewed,
// which tells the handler (and its middleware) that the database may
// still hold the lease, so that what the handler returns may yet apply.
var errNotRenewed = leasetype.ErrLeaseNotRenewed
