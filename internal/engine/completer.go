package engine

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/service"
	"github.com/leasehold/leasehold/leasetype"
)

// completerFlushers is how many finish statements may be in flight at
// once. One: while it is written, the next batch gathers, so batches grow
// with the load. A second flusher halves the batches and doubles the
// statements (and commits) for no gain in throughput: at 20,000 jobs/s
// PostgreSQL spends its time per statement, not per row.
const completerFlushers = 1

// releaseTimeout bounds the writing of outcomes and releases at Stop.
const releaseTimeout = 10 * time.Second

// minReleaseBudget is the least time Stop gives the last writes, so that
// a database that answers gets them even when the leases are about to
// expire.
const minReleaseBudget = 500 * time.Millisecond

// Finisher is the part of the driver the completer calls.
type Finisher interface {
	Finish(ctx context.Context, tx any, p []*driver.FinishParams) ([]driver.FinishResult, error)
}

// CompleterConfig is what a Completer needs.
type CompleterConfig struct {
	Finisher Finisher
	Leases   *Leases
	Window   *Window
	// Batch caps the outcomes one finish statement writes.
	Batch int
	// Linger, when positive, is how long a batch may gather while the
	// load is high: when the last statement wrote at least LingerFrom
	// outcomes, the next one waits up to Linger for Batch of them. Below
	// that load outcomes are written as they come.
	Linger     time.Duration
	LingerFrom int
	// Refused reports whether a failed finish statement was refused by
	// the database, as opposed to failing on the way (driver.Refuser); an
	// outcome is given up only after a refusal. Nil: every error may be
	// one.
	Refused func(error) bool
	// Ended reads the history rows of ended attempts (driver.EndedReader),
	// to tell what became of an outcome whose write found its lease gone
	// after a failed try or after CompleteTx (see account). Nil: such an
	// outcome is reported as a completion when written after CompleteTx,
	// and not at all after a failed try.
	Ended  EndedReader
	Emit   Emit
	Logger *slog.Logger
}

// Completer batches the fenced outcomes of finished handlers: each flush
// writes everything that has gathered since the previous one in a single
// statement, so the batch size grows with the load and an idle client adds
// no latency. Under load (the last statement wrote LingerFrom outcomes or
// more) a batch also waits up to Linger to fill, which bounds the finish
// statements to about one per Linger: fewer commits for the database, for
// at most Linger more before an outcome is written (its lease stays
// renewed meanwhile).
type Completer struct {
	cfg     CompleterConfig
	life    service.Lifecycle
	in      chan *finishItem
	wg      sync.WaitGroup
	abandon chan struct{} // closed when Stop's budget runs out
	once    sync.Once
	mu      sync.RWMutex // guards closed against concurrent Submit
	closed  bool
	// lastOK is when (Clock) a finish statement last succeeded.
	lastOK atomic.Int64

	// tryCtx is the parent of every finish statement: giveUp cancels it,
	// so a statement hanging on an unreachable database cannot hold Stop.
	tryCtx    context.Context
	cancelTry context.CancelFunc

	// release is the release budget's deadline, set once by ArmRelease;
	// releaseEnd gives up at it.
	releaseOnce sync.Once
	release     time.Time
	releaseEnd  *time.Timer
}

// NewCompleter returns a completer.
func NewCompleter(cfg CompleterConfig) *Completer {
	k := &Completer{cfg: cfg, in: make(chan *finishItem, 4*cfg.Batch), abandon: make(chan struct{})}
	k.tryCtx, k.cancelTry = context.WithCancel(context.Background())
	return k
}

// Start launches the flush loop.
func (k *Completer) Start(context.Context) error {
	if _, err := k.life.Begin(); err != nil {
		return err
	}
	for range completerFlushers {
		k.wg.Add(1)
		go func() { defer k.wg.Done(); k.loop() }()
	}
	return nil
}

// Submit queues an outcome. After Stop it drops it: the lease then
// expires and the watcher returns the job (a straggler at shutdown).
func (k *Completer) Submit(item *finishItem) { k.submit(item, false) }

// SubmitOrDrop queues an outcome as Submit does, but drops it rather than
// wait when the queue is full (a database that does not take the writes):
// for the release of a lease claimed while the client stops, which nothing
// must wait on, since its lease expires and returns the job anyway.
func (k *Completer) SubmitOrDrop(item *finishItem) { k.submit(item, true) }

// submit is Submit, or SubmitOrDrop when orDrop is set.
func (k *Completer) submit(item *finishItem, orDrop bool) {
	k.mu.RLock()
	defer k.mu.RUnlock()
	switch {
	case k.closed:
		k.dropUnqueued(item, "leasehold: outcome after shutdown dropped; the lease will expire")
	case !orDrop:
		k.in <- item
	default:
		select {
		case k.in <- item:
		default:
			k.dropUnqueued(item, "leasehold: release dropped: the outcome queue is full; the lease will expire")
		}
	}
}

// dropUnqueued gives up an outcome that never reached the queue, saying
// msg.
func (k *Completer) dropUnqueued(item *finishItem, msg string) {
	k.cfg.Logger.Warn(msg, "job", item.p.ID, "outcome", item.p.Outcome)
	k.drop(item)
	k.forget(item)
}

// Stop stops accepting outcomes and waits until every submitted one is
// written, for at most the release budget, even when ctx is already done:
// releasing is quick and spares the next worker a TTL. The budget is
// releaseTimeout, but no later than the newest held lease would expire
// (by its last renewal), since a write after that spares nobody a wait;
// at least minReleaseBudget. Outcomes still unwritten then are given up:
// their leases expire and the watcher returns their jobs.
//
// The budget starts at the first of Stop and ArmRelease, so that the
// releases the executor submits at shutdown and these last writes share
// it.
func (k *Completer) Stop(ctx context.Context) error {
	return k.life.Stop(ctx, func(ctx context.Context) {
		flushCtx, cancel := context.WithDeadline(context.WithoutCancel(ctx), k.ArmRelease())
		defer cancel()
		k.close(flushCtx)
		k.releaseEnd.Stop()
	})
}

// ArmRelease starts the release budget, once, and returns its deadline:
// then every outcome still queued or unwritten is given up, which also
// frees a Submit waiting for room in a full queue. The executor arms it
// before it releases the leases it cut off, which may otherwise wait
// behind outcomes a database that does not answer never takes.
func (k *Completer) ArmRelease() time.Time {
	k.releaseOnce.Do(func() {
		d := k.releaseBudget()
		k.release = time.Now().Add(d)
		k.releaseEnd = time.AfterFunc(d, k.giveUp)
	})
	return k.release
}

// close stops accepting outcomes and waits until every submitted one is
// written, or until ctx is done. The give-up is armed before the lock: with
// the queue full and the database not answering, submitters wait for room
// holding the read lock, and only the give-up, which makes the flushers
// drop what they hold, lets them through.
func (k *Completer) close(ctx context.Context) {
	stop := context.AfterFunc(ctx, k.giveUp)
	defer stop()
	k.mu.Lock()
	k.closed = true
	close(k.in)
	k.mu.Unlock()
	if !service.WaitGroup(ctx, &k.wg) {
		k.giveUp()
		k.wg.Wait()
	}
}

// releaseBudget is how long Stop may spend writing the last outcomes.
func (k *Completer) releaseBudget() time.Duration {
	leases := k.cfg.Leases.Snapshot()
	if len(leases) == 0 {
		return releaseTimeout
	}
	var newest int64
	for _, l := range leases {
		newest = max(newest, l.renewedAt.Load())
	}
	left := time.Duration(newest-k.cfg.Window.Clock.Now()) + k.cfg.Window.TTL
	return min(max(left, minReleaseBudget), releaseTimeout)
}

func (k *Completer) giveUp() { k.once.Do(func() { close(k.abandon); k.cancelTry() }) }

func (k *Completer) loop() {
	// One batch and one parameter slice serve every flush of this loop.
	batch := make([]*finishItem, 0, k.cfg.Batch)
	params := make([]*driver.FinishParams, 0, k.cfg.Batch)
	last := 0 // outcomes the previous statement wrote
	for item := range k.in {
		batch = k.gather(append(batch[:0], item), last >= k.cfg.LingerFrom)
		last = len(batch)
		params = params[:0]
		for _, it := range batch {
			params = append(params, &it.p)
		}
		k.flush(batch, params)
		clear(batch) // let the flushed leases be collected
		clear(params)
	}
}

// gather adds to batch the outcomes already queued, up to Batch, and when
// linger is set (and Linger positive) those that arrive within Linger, until
// Batch. It returns early when the queue is closed (Stop).
func (k *Completer) gather(batch []*finishItem, linger bool) []*finishItem {
	var deadline <-chan time.Time
	if linger && k.cfg.Linger > 0 {
		t := time.NewTimer(k.cfg.Linger)
		defer t.Stop()
		deadline = t.C
	}
	for len(batch) < k.cfg.Batch {
		var it *finishItem
		var ok bool
		select {
		case it, ok = <-k.in:
		default:
			if deadline == nil {
				return batch
			}
			select {
			case it, ok = <-k.in:
			case <-deadline:
				return batch
			}
		}
		if !ok {
			return batch
		}
		batch = append(batch, it)
	}
	return batch
}

// forget drops the item's lease from the lease set: its outcome is
// written, refused or given up, and it needs no more heartbeats.
func (k *Completer) forget(it *finishItem) { k.cfg.Leases.forget(it.lease) }

// drop reports an outcome given up unwritten.
func (k *Completer) drop(it *finishItem) { k.cfg.Emit(it.event(leasetype.EventOutcomeDropped)) }

// account reports the outcomes of a written batch: EventFinished for
// each item whose write applied (outcome cancelled, state cancelled, for
// one a cancel request turned into cancelled: see cancelledEvent),
// EventFenceRefused for each whose fence matched nothing. Two kinds of
// unapplied items say nothing by themselves, and are settled by the
// history of their attempts (settle): those of a
// retried batch (an earlier try failed, retried, and may have committed:
// its reply lost), and those written after CompleteTx (afterTx: the
// refusal is that of a job completed by the handler's transaction, or of
// a lease lost while that transaction rolled back).
//
// Finish names the jobs it wrote, not the attempts. A batch can hold two
// outcomes of one job: that of a lease this client lost, and that of the
// attempt that took the job over (a claim of this client too). The fence
// lets only the job's current attempt write, and that is the highest of
// them: the other claims came before it. So a job named applied is the
// applied outcome of its latest attempt alone, and the lost lease's
// write is unapplied.
func (k *Completer) account(batch []*finishItem, applied []driver.FinishResult, retried bool) {
	latest := latestApplied(batch, applied)
	var unsure []*finishItem
	for _, it := range batch {
		a, ok := latest[it.p.ID]
		switch {
		case ok && it.p.Attempt == a.attempt && a.cancelled:
			k.cfg.Emit(it.cancelledEvent())
		case ok && it.p.Attempt == a.attempt:
			k.cfg.Emit(it.event(leasetype.EventFinished))
		case retried || it.afterTx:
			unsure = append(unsure, it)
		default:
			k.cfg.Emit(it.event(leasetype.EventFenceRefused))
		}
	}
	if len(unsure) > 0 {
		k.settle(unsure, retried)
	}
}

// appliedWrite is what account knows of a job whose write applied: the
// attempt that wrote it and whether the cancel rule cancelled the job.
type appliedWrite struct {
	attempt   int
	cancelled bool
}

// latestApplied maps each job named in applied to the highest attempt of
// it in batch, the one whose write applied (see account), and to whether
// that write cancelled it.
func latestApplied(batch []*finishItem, applied []driver.FinishResult) map[int64]appliedWrite {
	latest := make(map[int64]appliedWrite, len(applied))
	for _, r := range applied {
		latest[r.ID] = appliedWrite{cancelled: r.Cancelled}
	}
	for _, it := range batch {
		if a, ok := latest[it.p.ID]; ok && it.p.Attempt > a.attempt {
			a.attempt = it.p.Attempt
			latest[it.p.ID] = a
		}
	}
	return latest
}
