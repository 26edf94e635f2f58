package engine

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leasehold/leasehold/internal/service"
	"github.com/leasehold/leasehold/internal/statemachine"
	"github.com/leasehold/leasehold/leasetype"
)

// ExecutorConfig is what an Executor needs.
type ExecutorConfig struct {
	// Owner is the client's lease owner, written with every outcome.
	Owner string
	// Base is the parent of every handler's context.
	Base context.Context
	// Run calls the handler of row's kind (through the work middleware)
	// and returns its error; it recovers a panic into an error.
	Run func(ctx context.Context, row *leasetype.JobRow) error
	// Classify turns a handler's error into the attempt's result.
	Classify Classify
	// GiveUp decides what a lease the watchdog gave up ends as, and whether
	// Stop may release a lease whose handler it cut off (see release).
	GiveUp    GiveUp
	Leases    *Leases
	Window    *Window
	Completer *Completer
	Emit      Emit
	Logger    *slog.Logger
}

// Executor runs the handlers of claimed leases on a pool of goroutines,
// decides each attempt's outcome and submits it to the completer. Stop
// waits for running handlers until its context is done, then cancels the
// rest (cause ErrShutdown) and releases their leases.
type Executor struct {
	cfg     ExecutorConfig
	life    service.Lifecycle
	pool    *workerPool[*Lease]
	jobs    sync.WaitGroup // handlers started or about to be
	running atomic.Int64
}

// NewExecutor returns an executor; Start it before handing it leases.
func NewExecutor(cfg ExecutorConfig) *Executor {
	e := &Executor{cfg: cfg}
	e.pool = newWorkerPool(e.runClaimed)
	return e
}

// Start lets the executor accept leases.
func (e *Executor) Start(context.Context) error {
	_, err := e.life.Begin()
	return err
}

// Stop waits for running handlers until ctx is done, then cancels and
// releases the rest; the pool's goroutines then exit, each after its
// current job. The producer must have stopped first.
func (e *Executor) Stop(ctx context.Context) error {
	return e.life.Stop(ctx, func(ctx context.Context) {
		if !service.WaitGroup(ctx, &e.jobs) {
			e.releaseRunning()
		}
		e.pool.close()
	})
}

// Running returns how many leases the executor holds whose handler has not
// returned yet (including ones waiting for a goroutine).
func (e *Executor) Running() int64 { return e.running.Load() }

// hold adds a lease claimed into q's slots, sent at the Clock reading
// sent, to the lease set. It returns nil, and holds nothing, when the set
// has that lease already (see reclaimed).
func (e *Executor) hold(q *queue, row *leasetype.JobRow, sent int64) *Lease {
	l := &Lease{Row: row, slot: q, window: e.cfg.Window}
	l.value = leaseValue{Context: e.cfg.Base, l: l}
	l.ctx, l.cancel = context.WithCancelCause(&l.value)
	l.renewedAt.Store(sent)
	l.claimSent = sent
	if held := e.cfg.Leases.add(l); held != nil {
		l.cancel(errReclaimed)
		e.reclaimed(held, sent)
		return nil
	}
	e.running.Add(1)
	e.cfg.Emit(leasetype.Event{Kind: leasetype.EventClaimed, Job: row})
	return l
}

// errReclaimed ends the context of a claimed lease the client held
// already; no handler ever receives it.
var errReclaimed = errors.New("leasehold: lease claimed again while held")

// reclaimed handles a claim that returned a lease this client holds
// already, with the same job and attempt: the database lost the commit of
// the claim that gave it (an asynchronous standby promoted without it),
// showed the job pending again, and this client claimed it once more with
// the same fence. The handler already running keeps the job, and its
// outcome, written under that fence, now applies; a second handler would
// run the job twice. The claim renewed the lease, so held counts as
// renewed from sent. If held's handler was already told its lease is lost,
// nobody runs the job under this claim: it waits for the lease to expire
// and for the stuck watcher, as a lost lease does.
func (e *Executor) reclaimed(held *Lease, sent int64) {
	if sent > held.renewedAt.Load() {
		held.renewedAt.Store(sent) // a heartbeat storing a later reading meanwhile only shortens the window
	}
	e.cfg.Logger.Warn("leasehold: a claim returned a lease this client holds already; the running handler keeps it",
		"job", held.Row.ID, "attempt", held.Row.Attempt)
	e.cfg.Emit(leasetype.Event{Kind: leasetype.EventClaimedAgain, Job: held.Row})
}

// run hands a held lease to a goroutine of the pool.
func (e *Executor) run(l *Lease) {
	e.jobs.Add(1)
	e.pool.run(l)
}

// releaseNow gives back a lease claimed while the client was stopping,
// unless the completer's queue is full: the producer's stop must not wait
// for room (the lease expires instead).
func (e *Executor) releaseNow(l *Lease) {
	e.running.Add(-1)
	l.slot.done()
	e.releaseWith(l, e.cfg.Completer.SubmitOrDrop)
}

// release cancels l's handler, if any, and submits its release, unless
// its outcome was submitted already. It reports whether it left the lease
// to the watcher instead.
//
// A lease whose handler may have started, in a queue that flags or
// reconciles expired leases (GiveUp says to write nothing), is not
// released: the handler may have been cut off mid-effect (a payment
// request aborted), and a released job would run again blindly. Nothing
// is written; the lease runs out and the watcher flags or reconciles the
// job, as for a crashed worker. started is read after finalized is set,
// and runClaimed sets started before its last check of finalized, so a
// lease read as not started never runs its handler.
//
// The release of a lease whose handler completed the job with CompleteTx
// is written after that transaction (afterTx), as decide's write is: when
// it committed, the refusal of the release is the job's completion, told
// by the attempt's history row (settle).
func (e *Executor) release(l *Lease) (left bool) { return e.releaseWith(l, e.cfg.Completer.Submit) }

// releaseWith is release, submitting the release with submit.
func (e *Executor) releaseWith(l *Lease, submit func(*finishItem)) (left bool) {
	if !l.finalized.CompareAndSwap(false, true) {
		return false
	}
	l.end(endDone) // a heartbeat or the watchdog finding it lost after this says nothing
	l.cancel(ErrShutdown)
	if l.started.Load() {
		if _, write := e.cfg.GiveUp(l.Row); !write {
			e.cfg.Leases.forget(l)
			e.cfg.Logger.Warn("leasehold: shutdown cut off a handler in a queue that flags or reconciles expired leases; "+
				"its lease is left to expire for the watcher", "job", l.Row.ID, "attempt", l.Row.Attempt, "queue", l.Row.Queue)
			return true
		}
	}
	item := l.finish(e.cfg.Owner, statemachine.Ending{Outcome: leasetype.OutcomeReleased})
	item.afterTx = l.completedInTx.Load()
	item.ran = e.ranSoFar(l)
	submit(item)
	return false
}

// ranSoFar returns how long l's handler has run, if it was called: the
// Duration of the release of a handler Stop cut off, which the executor
// never times otherwise (ended skips a lease already released). Those
// are the longest runs; a zero would make them look unrun. A lease
// released before its handler was called ran for zero.
func (e *Executor) ranSoFar(l *Lease) time.Duration {
	start := l.startedAt.Load()
	if start == 0 {
		return 0
	}
	return time.Duration(e.cfg.Window.Clock.Now() - start)
}

// releaseRunning cancels the handlers still running and releases their
// leases. A handler that finishes later writes nothing: its lease is gone.
// The completer's release budget starts now: past it, releases still
// waiting for room in its queue are given up (their leases expire), so a
// database that does not answer cannot hold Stop. The leases left to the
// watcher after a CompleteTx are reported by their history
// (reportCompletedInTx), read within that budget, or, when a CompleteTx
// of theirs was refused, as that refusal (refusedInTx); either with how
// long the handler ran until then.
func (e *Executor) releaseRunning() {
	e.cfg.Completer.ArmRelease()
	var afterTx []*finishItem
	for _, l := range e.cfg.Leases.Snapshot() {
		if !e.release(l) {
			continue
		}
		switch {
		case l.refused.Load():
			e.cfg.Emit(refusedInTx(l, e.ranSoFar(l), nil))
		case l.completedInTx.Load():
			it := e.unwritten(l)
			it.ran = e.ranSoFar(l)
			afterTx = append(afterTx, it)
		}
	}
	e.reportCompletedInTx(afterTx)
}

// refusedInTx is the EventFenceRefused of lease l, whose CompleteTx the
// database refused (Lease.MarkLost), for a handler that ran for ran and
// returned err. CompleteTx reports nothing itself: the refusal is reported
// once the handler has returned (ended), or when Stop cut it off and
// writes nothing for it (releaseRunning), so that the event carries how
// long the handler ran and the attempt ends in one event. When Stop
// releases such a lease, the release's own refusal is that event.
func refusedInTx(l *Lease, ran time.Duration, err error) leasetype.Event {
	return leasetype.Event{Kind: leasetype.EventFenceRefused, Job: l.Row, Outcome: leasetype.OutcomeCompleted,
		State: leasetype.StateCompleted, Duration: ran, Err: err}
}

// unwritten returns an item for l that is never written, only reported
// (see reportCompletedInTx). Only the caller that set finalized may call
// it.
func (e *Executor) unwritten(l *Lease) *finishItem {
	it := l.finish(e.cfg.Owner, statemachine.Ending{})
	it.afterTx = true
	return it
}

// reportCompletedInTx reports the items of leases whose handler called
// CompleteTx and for which nothing is written (left to the watcher, or so
// decided), by the history rows of their attempts, read in one statement:
// an attempt this owner ended completed is the job's completion, reported
// as EventFinished (completed), as settle reports a refused write after
// CompleteTx. Nothing was submitted for them, so any other attempt (its
// transaction rolled back, or not committed yet), or a history that
// cannot be read, is reported as before: not at all, the job left to the
// watcher.
func (e *Executor) reportCompletedInTx(items []*finishItem) {
	if len(items) == 0 {
		return
	}
	ended, ok := e.cfg.Completer.readEnded(items)
	if !ok {
		return
	}
	for _, it := range items {
		a, found := ended[attemptKey{it.p.ID, it.p.Attempt}]
		if found && a.Owner == it.p.Owner && a.Outcome == leasetype.OutcomeCompleted {
			e.cfg.Emit(completedInTx(it))
		}
	}
}

// runClaimed runs a claimed lease's handler, then frees its slot. The
// lease is checked here, on the pool goroutine right before the handler
// would start, so that a late claim reply and time spent waiting for a
// goroutine both count.
func (e *Executor) runClaimed(l *Lease) {
	defer e.jobs.Done()
	defer l.slot.done()
	l.started.Store(true) // before the last check (see release)
	if e.skipUnsafeStart(l) {
		return
	}
	e.runLease(l)
}

// runLease runs one lease's handler and submits its fenced outcome. The
// lease stays in the lease set, and so keeps being renewed, until the
// completer has written that outcome: a queue of outcomes waiting for a
// busy database must not let the leases behind them expire.
//
// A handler that ends its goroutine without returning (runtime.Goexit, as
// t.FailNow does in a test's handler) ends its attempt as one that
// returned ErrHandlerExited: the lease must not stay renewed with no
// handler behind it.
func (e *Executor) runLease(l *Lease) {
	start := e.cfg.Window.Clock.Now()
	l.startedAt.Store(start)
	e.cfg.Emit(leasetype.Event{Kind: leasetype.EventStarted, Job: l.Row, Duration: time.Duration(start - l.claimSent)})
	returned := false
	defer func() {
		if !returned {
			e.ended(l, start, ErrHandlerExited)
		}
	}()
	err := e.cfg.Run(l.ctx, l.Row)
	returned = true
	e.ended(l, start, err)
}

// ended submits the outcome of l's handler, started at start, which
// returned err.
func (e *Executor) ended(l *Lease, start int64, err error) {
	ran := e.cfg.Window.Clock.Now() - start
	e.running.Add(-1)
	if !l.finalized.CompareAndSwap(false, true) {
		l.cancel(context.Canceled)
		return // Stop already released this lease
	}
	// From here no heartbeat or watchdog reports the lease lost; one that
	// got there first has stored its flag, which decide reads.
	l.end(endDone)
	item := e.decide(l, err)
	l.cancel(errHandlerDone) // the watchdog and lost-lease checks skip it now
	if item == nil {
		e.cfg.Leases.forget(l)
		switch {
		case l.refused.Load():
			e.cfg.Emit(refusedInTx(l, time.Duration(ran), err))
		case l.completedInTx.Load():
			it := e.unwritten(l)
			it.ran, it.err = time.Duration(ran), err
			e.reportCompletedInTx([]*finishItem{it})
		}
		return
	}
	item.ran = time.Duration(ran)
	e.cfg.Completer.Submit(item)
}

// skipUnsafeStart reports whether l's handler must not start because
// Usable refuses its lease (a claim reply that arrived late, a wait for a
// goroutine, a lease already found lost), and if so ends the lease.
//
// The lease is released rather than left to expire. The release is a
// fenced write: if another worker has taken the job over, the database
// refuses it and changes nothing; if not, the job is pending again at
// once, keeps its place in line and is not charged to its retry budget
// (no handler ran, so nothing outside can have happened), instead of
// waiting out the TTL and the watcher, which could also flag a job that
// never ran as stuck.
func (e *Executor) skipUnsafeStart(l *Lease) bool {
	err := l.Usable()
	if err == nil {
		return false
	}
	e.running.Add(-1)
	if !l.finalized.CompareAndSwap(false, true) {
		return true // Stop has released the lease already
	}
	e.cfg.Emit(leasetype.Event{Kind: leasetype.EventNotStarted, Job: l.Row, Err: err})
	e.cfg.Logger.Warn("leasehold: lease past its safe window before the handler started; not running it",
		"job", l.Row.ID, "attempt", l.Row.Attempt, "late", e.cfg.Window.Overdue(l, e.cfg.Window.Clock.Now()), "err", err)
	l.end(endDone)          // lostInDB, below, is stored by a heartbeat that got there first
	l.cancel(errNotStarted) // the watchdog and lost-lease checks skip it now
	if l.lostInDB.Load() {
		e.cfg.Leases.forget(l) // a heartbeat found it taken over: nothing to write
		return true
	}
	e.cfg.Completer.Submit(l.finish(e.cfg.Owner, statemachine.Ending{Outcome: leasetype.OutcomeReleased}))
	return true
}
