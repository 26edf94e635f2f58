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

// ClaimTimeout bounds one claim statement, one probe, and one finish
// statement.
// Claims run on a context that Stop does not cancel at once: a claim that
// committed must be seen, so that its leases are run or released rather
// than left to expire. Stop waits for a claim in flight until its context
// is done, then abandons it (a database that does not answer must not hold
// Stop).
const ClaimTimeout = 30 * time.Second

// fetchCoalesce bounds how long a queue with jobs waiting lets freed slots
// gather before its next claim.
const fetchCoalesce = 2 * time.Millisecond

// Claimer is the part of the driver the producer calls: Claim for one
// queue, and ClaimableQueues for the probe that tells which idle queues
// have work.
type Claimer interface {
	Claim(ctx context.Context, p *driver.ClaimParams) ([]*leasetype.JobRow, error)
	ClaimableQueues(ctx context.Context, p *driver.ClaimableParams) ([]string, error)
}

// QueueConfig is one queue the producer claims from.
type QueueConfig struct {
	// MaxWorkers is how many of the queue's leases run at once.
	MaxWorkers int
	// TakeOver lets claims take over expired leases (false for queues
	// that flag them stuck or reconcile them).
	TakeOver bool
}

// ProducerConfig is what a Producer needs.
type ProducerConfig struct {
	Claimer Claimer
	// Notifier, when non-nil, wakes queues when jobs are inserted.
	Notifier driver.Notifier
	Queues   map[string]QueueConfig
	// Kinds are the kinds with a handler: the only ones claimed.
	Kinds []string
	Owner string
	TTL   time.Duration
	// PollInterval is the period of the probe: how long a job inserted
	// without a wake-up hint waits, at most, before its queue is claimed
	// from, unless probes are slow (probeGap spaces them out then).
	PollInterval time.Duration
	// FetchBatch caps the jobs one claim leases.
	FetchBatch int
	Executor   *Executor
	Clock      *Clock
	// Orphans, when non-nil, releases the leases a claim whose reply was
	// lost left in the database (producer_orphans.go).
	Orphans OrphanReleaser
	// Emit receives EventClaimFailed, and EventTakenOver for each claimed
	// row taken over from an expired lease.
	Emit   Emit
	Logger *slog.Logger
}

// Producer claims jobs of every queue into free worker slots (one loop
// per queue) and hands them to the executor. A queue's loop claims only
// when woken: by a wake-up hint (the notifier's, or Wake after an insert
// in this process), by a freed slot while jobs are likely waiting, or by
// the probe, one ClaimableQueues statement per poll interval for all the
// queues, which wakes those that have work. Idle queues thus cost one
// statement per poll interval per process, however many there are.
type Producer struct {
	cfg    ProducerConfig
	life   service.Lifecycle
	queues map[string]*queue
	// probeParams asks which queues have work; built once.
	probeParams *driver.ClaimableParams
	// claimCtx bounds claim statements, which the lifecycle's cancel does
	// not reach; Stop cancels it once its context is done.
	claimCtx    context.Context
	abortClaims context.CancelFunc
	// claiming counts the claim statements in flight (beginClaim): Stop
	// abandons claims, and says so, only when one is. claimMu makes the
	// count and the check of the loops' context one step, so that a claim
	// refused because Stop has begun is never counted, even for a moment.
	claimMu  sync.Mutex
	claiming int
}

// NewProducer returns a producer. Wake may be called before Start.
func NewProducer(cfg ProducerConfig) *Producer {
	p := &Producer{cfg: cfg, queues: make(map[string]*queue, len(cfg.Queues))}
	p.claimCtx, p.abortClaims = context.WithCancel(context.Background())
	p.probeParams = &driver.ClaimableParams{Queues: make(map[string]bool, len(cfg.Queues)), Kinds: cfg.Kinds, Owner: cfg.Owner}
	for name, qc := range cfg.Queues {
		p.queues[name] = &queue{p: p, name: name, cfg: qc, wakeC: make(chan struct{}, 1), cur: cursor{interval: cfg.PollInterval}}
		p.probeParams.Queues[name] = qc.TakeOver
	}
	return p
}

// Start launches one claim loop per queue, the probe, and the listener.
func (p *Producer) Start(context.Context) error {
	ctx, err := p.life.Begin()
	if err != nil {
		return err
	}
	for _, q := range p.queues {
		p.life.Go(func() { q.loop(ctx) })
	}
	p.life.Go(func() { p.probeLoop(ctx) })
	if p.cfg.Notifier != nil {
		p.life.Go(func() { p.listen(ctx) })
	}
	return nil
}

// Stop ends the loops and waits for a claim in flight until ctx is done;
// then it abandons that claim (leases it may have taken expire). With no
// claim in flight it waits for the loops, which return promptly once
// cancelled, even when ctx is done already.
func (p *Producer) Stop(ctx context.Context) error {
	return p.life.Stop(ctx, p.halt)
}

// halt runs once the loops' context is cancelled. A loop that has not
// returned yet when ctx is done is not necessarily claiming: with ctx
// done already (a caller that stops on a signal's context, or a
// ShutdownTimeout spent by the parts stopped before) the loops have had
// no time to see the cancel. Only a claim counted in flight is abandoned
// and warned of; no claim starts after the count is read (beginClaim).
func (p *Producer) halt(ctx context.Context) {
	if !p.life.Wait(ctx) && p.claimsInFlight() > 0 {
		p.abortClaims()
		p.cfg.Logger.Warn("leasehold: a claim still in flight at shutdown was abandoned; " +
			"leases it took, if any, expire and their jobs come back")
	}
	p.life.Wait(context.Background())
	p.abortClaims()
	p.stopTimers()
}

// beginClaim reports whether to send a claim, and counts it in flight if
// so: not once ctx, the loops' context, is cancelled. Stop cancels ctx
// before it reads the count, under the same lock, so either the claim
// sees the cancel and is not sent, or Stop sees it counted. The caller
// ends the count (endClaim) when the claim returns.
func (p *Producer) beginClaim(ctx context.Context) bool {
	p.claimMu.Lock()
	defer p.claimMu.Unlock()
	if ctx.Err() != nil {
		return false
	}
	p.claiming++
	return true
}

// endClaim ends the count of a claim beginClaim let through.
func (p *Producer) endClaim() {
	p.claimMu.Lock()
	p.claiming--
	p.claimMu.Unlock()
}

// claimsInFlight returns how many claims beginClaim let through have not
// returned yet.
func (p *Producer) claimsInFlight() int {
	p.claimMu.Lock()
	defer p.claimMu.Unlock()
	return p.claiming
}

// Wake asks queue's loop, if the producer claims from it, to look for jobs
// now. It never blocks.
func (p *Producer) Wake(queue string) {
	if q := p.queues[queue]; q != nil {
		q.hint()
	}
}

func (p *Producer) listen(ctx context.Context) {
	err := p.cfg.Notifier.Listen(ctx, p.Wake)
	if err != nil && ctx.Err() == nil {
		p.cfg.Logger.Error("leasehold: listener stopped", "err", err)
	}
}

// queue claims jobs of one queue into its free worker slots.
type queue struct {
	p    *Producer
	name string
	cfg  QueueConfig
	// inFlight counts the queue's claimed leases not yet done; at most
	// cfg.MaxWorkers.
	inFlight atomic.Int64
	wakeC    chan struct{} // coalesced wake-up hints
	// hints counts the wake-up hints (Wake): a full claim beside the loop
	// compares it at its end with its count when it was sent.
	hints atomic.Uint64
	// more is set when the last claim filled every slot it asked for, so
	// freed slots should trigger another claim.
	more atomic.Bool
	// cur is where the queue's claims start their scan of pending jobs
	// (producer_cursor.go): the loop's, and a full claim's beside it.
	cur cursor
	// mark is what the look for a lost claim reply's leases needs
	// (producer_orphans.go).
	mark claimMark
	// fullTimer pokes the loop when the next full claim is due
	// (wakeForFull); nil until first needed. Only the loop arms it, and
	// the producer's halt stops it once the loop has returned.
	fullTimer *time.Timer
}

// hint is a wake-up hint: a job may have been inserted.
func (q *queue) hint() {
	q.hints.Add(1)
	q.poke()
}

// poke asks the loop to look for jobs now. It never blocks.
func (q *queue) poke() {
	select {
	case q.wakeC <- struct{}{}:
	default:
	}
}

// loop claims each time the queue is woken. It never polls by itself:
// the producer's probe wakes it when the queue has work.
func (q *queue) loop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-q.wakeC:
		}
		q.fetchWhileFull(ctx)
	}
}

// fetchWhileFull claims into free slots until a claim comes back short or
// no slot is free.
func (q *queue) fetchWhileFull(ctx context.Context) {
	for ctx.Err() == nil {
		q.releaseLost(ctx)
		// more is set before free slots are counted: a job that finishes
		// after the count then sees it and wakes the loop (see done).
		q.more.Store(true)
		free := q.free()
		if free <= 0 {
			return
		}
		n := min(free, q.p.cfg.FetchBatch)
		got := q.claim(ctx, n)
		if got < n {
			q.more.Store(false)
			return
		}
		q.coalesce(ctx)
	}
}

// coalesce runs after a claim that got every job it asked for, so more are
// likely waiting: it lets slots free up until every slot is free, up to
// one claim batch (coalesceTarget), or fetchCoalesce has passed. The next claim is then one batch instead of a
// trickle of one-job statements, each a round trip and a commit; a slot
// waits at most fetchCoalesce.
func (q *queue) coalesce(ctx context.Context) {
	want := q.coalesceTarget()
	t := time.NewTimer(fetchCoalesce)
	defer t.Stop()
	for q.free() < want {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			return
		case <-q.wakeC:
		}
	}
}

// claim leases up to n jobs and starts them; it returns how many it got.
// A slow full claim runs beside the loop instead, into a share of the n
// slots that claim holds for it, and a cursor claim takes the others
// (producer_cursor.go).
func (q *queue) claim(ctx context.Context, n int) int {
	p := q.p
	params := &driver.ClaimParams{
		Queue: q.name, Kinds: p.cfg.Kinds, Owner: p.cfg.Owner,
		TTL: p.cfg.TTL, Limit: n, TakeOver: q.cfg.TakeOver,
	}
	switch q.cur.prepare(params, p.cfg.Clock.Now()) {
	case cursorClaim:
		got := q.claimWith(ctx, params, false, 0)
		if got < params.Limit {
			q.wakeForFull(ctx)
		}
		return got
	case fullClaimBeside:
		full := *params
		full.Limit = max(1, n/besideShare)
		q.inFlight.Add(int64(full.Limit))
		hints := q.hints.Load()
		p.life.Go(func() { q.claimBeside(ctx, &full, hints) })
		if n == full.Limit {
			return n
		}
		params.Limit = n - full.Limit
		q.cur.asCursorClaim(params)
		return full.Limit + q.claimWith(ctx, params, false, 0)
	default:
		return q.claimWith(ctx, params, true, 0)
	}
}

// claimBeside runs full, a full claim into slots reserved for it, beside
// the loop; hints is the count of wake-up hints when it was sent. It wakes
// the loop when it ends only if the loop needs it: when it filled its
// limit, as more may wait, or when a hint came while it ran. That hint's
// job may sort before the cursor, where neither this claim (sent before
// it) nor the cursor claim the hint ran can see it, and the next full
// claim, due only now that this one ended, must take it (wakeForFull arms
// the timer for it); or the hint found no free slot, and the slots this
// claim leaves unused are free now. Otherwise nothing waits: a claim from
// the start of claim order that came back short left no claimable job
// behind it; after a failed one the loop is woken as after one that
// failed in the loop (lookSoon, the probe). Waking the loop then would
// run a cursor claim that comes back short and arms the timer for the
// next full claim, which runs beside the loop again, and so on: an idle
// queue claiming by itself every ten full claims' time.
func (q *queue) claimBeside(ctx context.Context, full *driver.ClaimParams, hints uint64) {
	got := q.claimWith(ctx, full, true, full.Limit)
	// The hints are read once the claim no longer counts as running
	// (fullDone): a hint whose cursor claim saw it running is counted
	// here, and one whose cursor claim did not had wakeForFull arm the
	// timer for the next full claim.
	q.cur.fullDone()
	if got == full.Limit || q.hints.Load() != hints {
		q.poke()
	}
}

// wakeForFull pokes the loop when the queue's next full claim is due,
// after a cursor claim that came back short: the loop then sleeps until
// woken, and a job that sorts before the cursor (inserted ahead of it,
// its wake spent on that cursor claim) would otherwise wait for the
// probe, a poll interval, rather than for the next full claim. One timer
// per queue, reset at each arming; a busy queue, whose cursor claims fill
// their limit, never arms it.
func (q *queue) wakeForFull(ctx context.Context) {
	if ctx.Err() != nil {
		return
	}
	wait := time.Duration(q.cur.fullDue() - q.p.cfg.Clock.Now())
	if wait <= 0 {
		// Due already (it fell due during the cursor claim), unless a
		// full claim runs beside the loop: it started when due, after
		// the hints the loop had seen, and wakes the loop when it ends
		// if a hint came since (claimBeside).
		if !q.cur.busy() {
			q.poke()
		}
		return
	}
	if q.fullTimer == nil {
		q.fullTimer = time.AfterFunc(wait, q.poke)
		return
	}
	q.fullTimer.Reset(wait)
}

// stopTimers stops the queues' full-claim timers; the loops, which arm
// them, have returned.
func (p *Producer) stopTimers() {
	for _, q := range p.queues {
		if q.fullTimer != nil {
			q.fullTimer.Stop()
		}
	}
}

// claimWith runs claim params and starts the jobs it leased; it returns
// how many. The reserved slots, counted in flight already, become the
// jobs' own. Once ctx is done (the producer is stopping) it sends no
// claim and frees them.
func (q *queue) claimWith(ctx context.Context, params *driver.ClaimParams, full bool, reserved int) int {
	p := q.p
	if !p.beginClaim(ctx) {
		q.inFlight.Add(-int64(reserved)) // stopping: the reserved slots lease nothing
		return 0
	}
	cctx, cancel := context.WithTimeout(p.claimCtx, ClaimTimeout)
	defer cancel()
	// The leases start no earlier than the claim is sent: their safe
	// window is measured from here, however late the reply comes back,
	// and checked again right before each handler starts.
	sent := p.cfg.Clock.Now()
	rows, err := p.cfg.Claimer.Claim(cctx, params)
	p.endClaim()
	q.cur.claimed(params, full, rows, sent, p.cfg.Clock.Now())
	q.inFlight.Add(int64(len(rows) - reserved))
	q.mark.replied(rows)
	if err != nil {
		if p.claimCtx.Err() == nil {
			q.mark.failed(p.cfg.Clock.Now())
			q.lookSoon()
			p.cfg.Logger.Warn("leasehold: claim failed", "queue", q.name, "err", err)
			p.cfg.Emit(leasetype.Event{Kind: leasetype.EventClaimFailed, Err: err})
		}
		return 0
	}
	for _, row := range rows {
		if row.TakenOver {
			// The claim ended the expired attempt: this is its only
			// report, as no watcher will see that lease.
			p.cfg.Emit(leasetype.Event{Kind: leasetype.EventTakenOver, Job: row})
		}
		l := p.cfg.Executor.hold(q, row, sent)
		if l == nil {
			q.done() // held already: its slot is the running lease's
			continue
		}
		if ctx.Err() != nil {
			p.cfg.Executor.releaseNow(l)
			continue
		}
		p.cfg.Executor.run(l)
	}
	return len(rows)
}

// free returns how many more jobs the queue may run now.
func (q *queue) free() int { return q.cfg.MaxWorkers - int(q.inFlight.Load()) }

// coalesceTarget is how many free slots end a coalesce early.
func (q *queue) coalesceTarget() int { return min(q.cfg.MaxWorkers, q.p.cfg.FetchBatch) }

// done frees the slot of a finished lease and, if jobs are likely waiting,
// wakes the loop: when the first slot frees (the loop may be waiting on a
// full queue) and when enough are free to end a coalesce. Waking it for
// every job would cost a goroutine switch per job for nothing.
func (q *queue) done() {
	free := q.cfg.MaxWorkers - int(q.inFlight.Add(-1))
	if q.more.Load() && (free == 1 || free == q.coalesceTarget()) {
		q.poke()
	}
}
