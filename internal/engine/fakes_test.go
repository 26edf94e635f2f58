package engine

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/statemachine"
	"github.com/leasehold/leasehold/leasetype"
)

// fakeDB stands in for the driver calls of the engine (Claim,
// ClaimableQueues, Heartbeat, Finish and EndedAttempts) so that
// the parts can be tested without a database; the drivers themselves
// are tested against real databases by the conformance suite.
type fakeDB struct {
	mu sync.Mutex
	// pending rows are handed out by Claim, oldest first.
	pending []*leasetype.JobRow
	// claimDelay delays every Claim reply, probeDelay every
	// ClaimableQueues reply; probeDelays, when set, delay the first
	// ClaimableQueues replies instead, one each.
	claimDelay, probeDelay time.Duration
	probeDelays            []time.Duration
	// held are the leases Heartbeat renews, except the locked ones, which
	// it returns Locked; hbErr fails every Heartbeat.
	held        map[int64]bool
	locked      map[int64]bool
	cancelAsked map[int64]bool
	hbErr       error
	// hbDelay delays every Heartbeat reply.
	hbDelay time.Duration
	// finished are the outcomes written; refuse ids are refused;
	// poison ids fail every statement that holds them.
	finished []driver.FinishParams
	// batches are the sizes of the Finish statements, in order.
	batches []int
	refuse  map[int64]bool
	poison  map[int64]bool
	// flaky ids fail every statement that holds them with errFlaky, an
	// error that is no refusal (a dead pooled connection).
	flaky map[int64]bool
	down  bool
	// silent makes every Finish wait until its context ends (a database
	// that does not answer).
	silent bool
	// lostReplies makes the next statements apply their writes and fail
	// with errFlaky all the same (a commit whose reply is lost);
	// takeOverOnFail makes the next statements fail with errFlaky having
	// applied nothing, their leases then taken over by another attempt
	// (each ended lease_expired).
	lostReplies, takeOverOnFail int
	// ended are the history rows of the ended attempts, by lease: those
	// Finish wrote, and those a test adds (ended); endedReads are the
	// sizes of the EndedAttempts calls, in order; endedErr fails them.
	endedRows  map[attemptKey]driver.EndedAttempt
	endedReads []int
	endedErr   error
	// heartbeats are the sizes of the Heartbeat statements, in order.
	heartbeats []int
	// claims and probes count the Claim and ClaimableQueues calls;
	// claimErr fails every Claim, probeErr every ClaimableQueues.
	claims, probes     int
	claimErr, probeErr error
	// probeOwner is the Owner of the last ClaimableQueues call.
	probeOwner string
}

func newFakeDB(rows ...*leasetype.JobRow) *fakeDB {
	db := &fakeDB{held: map[int64]bool{}, locked: map[int64]bool{}, cancelAsked: map[int64]bool{}, refuse: map[int64]bool{}, poison: map[int64]bool{}, flaky: map[int64]bool{},
		endedRows: map[attemptKey]driver.EndedAttempt{}}
	db.pending = rows
	return db
}

func (db *fakeDB) Claim(ctx context.Context, p *driver.ClaimParams) ([]*leasetype.JobRow, error) {
	db.mu.Lock()
	db.claims++
	if err := db.claimErr; err != nil {
		db.mu.Unlock()
		return nil, err
	}
	var rows []*leasetype.JobRow
	db.pending = slices.DeleteFunc(db.pending, func(r *leasetype.JobRow) bool {
		take := r.Queue == p.Queue && len(rows) < p.Limit
		if take {
			rows = append(rows, r)
		}
		return take
	})
	for _, r := range rows {
		r.Attempt++
		r.State, r.LeaseOwner = leasetype.StateProcessing, p.Owner
		db.held[r.ID] = true
	}
	delay := db.claimDelay
	db.mu.Unlock()
	if delay > 0 {
		time.Sleep(delay)
	}
	return rows, nil
}

// ClaimableQueues returns the queues of p that have a pending row.
func (db *fakeDB) ClaimableQueues(ctx context.Context, p *driver.ClaimableParams) ([]string, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	db.probes++
	db.probeOwner = p.Owner
	if len(db.probeDelays) > 0 {
		time.Sleep(db.probeDelays[0])
		db.probeDelays = db.probeDelays[1:]
	} else {
		time.Sleep(db.probeDelay)
	}
	if db.probeErr != nil {
		return nil, db.probeErr
	}
	var out []string
	for _, r := range db.pending {
		if _, ok := p.Queues[r.Queue]; ok && !slices.Contains(out, r.Queue) {
			out = append(out, r.Queue)
		}
	}
	slices.Sort(out)
	return out, nil
}

// add makes rows pending.
func (db *fakeDB) add(rows ...*leasetype.JobRow) {
	db.mu.Lock()
	defer db.mu.Unlock()
	db.pending = append(db.pending, rows...)
}

// calls returns the Claim and ClaimableQueues calls so far.
func (db *fakeDB) calls() (claims, probes int) {
	db.mu.Lock()
	defer db.mu.Unlock()
	return db.claims, db.probes
}

func (db *fakeDB) Heartbeat(ctx context.Context, p *driver.HeartbeatParams) ([]*driver.HeartbeatResult, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	time.Sleep(db.hbDelay)
	if db.hbErr != nil {
		return nil, db.hbErr
	}
	db.heartbeats = append(db.heartbeats, len(p.Leases))
	var out []*driver.HeartbeatResult
	for _, l := range p.Leases {
		if db.held[l.ID] {
			out = append(out, &driver.HeartbeatResult{ID: l.ID, CancelRequested: db.cancelAsked[l.ID], Locked: db.locked[l.ID]})
		}
	}
	return out, nil
}

var (
	errDown  = errors.New("database down")
	errFlaky = errors.New("write: broken pipe")
)

// refusedUnlessFlaky is CompleterConfig.Refused for a fakeDB: every error
// but errFlaky and errDown is the database refusing the statement.
func refusedUnlessFlaky(err error) bool {
	return !errors.Is(err, errFlaky) && !errors.Is(err, errDown)
}

func (db *fakeDB) Finish(ctx context.Context, tx any, ps []*driver.FinishParams) ([]driver.FinishResult, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.silent {
		db.mu.Unlock()
		<-ctx.Done()
		db.mu.Lock()
		return nil, ctx.Err()
	}
	if db.down {
		return nil, errDown
	}
	for _, p := range ps {
		if db.poison[p.ID] {
			return nil, errors.New("poisoned outcome")
		}
		if db.flaky[p.ID] {
			return nil, errFlaky
		}
	}
	if db.takeOverOnFail > 0 {
		db.takeOverOnFail--
		for _, p := range ps {
			delete(db.held, p.ID)
			db.endedRows[attemptKey{p.ID, p.Attempt}] = driver.EndedAttempt{ID: p.ID, Attempt: p.Attempt,
				Owner: p.Owner, Outcome: leasetype.OutcomeLeaseExpired}
		}
		return nil, errFlaky
	}
	db.batches = append(db.batches, len(ps))
	var ids []driver.FinishResult
	for _, p := range ps {
		if db.refuse[p.ID] || !db.held[p.ID] {
			continue
		}
		delete(db.held, p.ID)
		db.finished = append(db.finished, *p)
		// The drivers' cancel rule (driver.Transition).
		cancelled := db.cancelAsked[p.ID] && p.Cancellable()
		outcome := p.Outcome
		if cancelled {
			outcome = p.OutcomeWhenCancelled()
		}
		db.endedRows[attemptKey{p.ID, p.Attempt}] = driver.EndedAttempt{ID: p.ID, Attempt: p.Attempt,
			Owner: p.Owner, Outcome: outcome}
		ids = append(ids, driver.FinishResult{ID: p.ID, Cancelled: cancelled})
	}
	if db.lostReplies > 0 {
		db.lostReplies--
		return nil, errFlaky
	}
	return ids, nil
}

// EndedAttempts implements EndedReader from the history rows in ended.
func (db *fakeDB) EndedAttempts(_ context.Context, leases []driver.LeaseRef) ([]driver.EndedAttempt, error) {
	db.mu.Lock()
	defer db.mu.Unlock()
	db.endedReads = append(db.endedReads, len(leases))
	if db.endedErr != nil {
		return nil, db.endedErr
	}
	var out []driver.EndedAttempt
	for _, l := range leases {
		if e, ok := db.endedRows[attemptKey{l.ID, l.Attempt}]; ok {
			out = append(out, e)
		}
	}
	return out, nil
}

// ended adds the history row of an attempt ended by someone else than the
// completer (a CompleteTx, a takeover).
func (db *fakeDB) ended(e driver.EndedAttempt) {
	db.mu.Lock()
	defer db.mu.Unlock()
	db.endedRows[attemptKey{e.ID, e.Attempt}] = e
}

// reads returns the sizes of the EndedAttempts calls so far.
func (db *fakeDB) reads() []int {
	db.mu.Lock()
	defer db.mu.Unlock()
	return slices.Clone(db.endedReads)
}

// finishBatches returns the sizes of the Finish statements so far.
func (db *fakeDB) finishBatches() []int {
	db.mu.Lock()
	defer db.mu.Unlock()
	return slices.Clone(db.batches)
}

func (db *fakeDB) outcomes() map[int64]driver.FinishParams {
	db.mu.Lock()
	defer db.mu.Unlock()
	m := map[int64]driver.FinishParams{}
	for _, p := range db.finished {
		m[p.ID] = p
	}
	return m
}

var discard = slog.New(slog.NewTextHandler(io.Discard, nil))

// recorder collects events.
type recorder struct {
	mu  sync.Mutex
	evs []leasetype.Event
}

func (r *recorder) emit(ev leasetype.Event) {
	r.mu.Lock()
	r.evs = append(r.evs, ev)
	r.mu.Unlock()
}

// kinds returns the kinds of the events recorded for job id, in order.
func (r *recorder) kinds(id int64) []leasetype.EventKind {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ks []leasetype.EventKind
	for _, ev := range r.evs {
		if ev.Job != nil && ev.Job.ID == id {
			ks = append(ks, ev.Kind)
		}
	}
	return ks
}

func (r *recorder) count(k leasetype.EventKind) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := 0
	for _, ev := range r.evs {
		if ev.Kind == k {
			n++
		}
	}
	return n
}

func rows(n int) []*leasetype.JobRow {
	out := make([]*leasetype.JobRow, n)
	for i := range out {
		out[i] = &leasetype.JobRow{ID: int64(i + 1), Kind: "k", Queue: "q", State: leasetype.StatePending, MaxAttempts: 3}
	}
	return out
}

// rig is an engine wired to a fakeDB: the parts a client builds, in the
// same order.
type rig struct {
	t    *testing.T
	db   *fakeDB
	rec  *recorder
	leas *Leases
	win  *Window
	comp *Completer
	exec *Executor
	hb   *Heartbeater
	prod *Producer
}

type rigOpts struct {
	ttl, margin, interval time.Duration
	run                   func(ctx context.Context, row *leasetype.JobRow) error
	workers               int
	// queues replaces the one queue "q" of workers slots; poll replaces
	// the 20 ms poll interval.
	queues map[string]QueueConfig
	poll   time.Duration
	// giveUp replaces giveUpLeaseLost; ended makes the completer read the
	// history of its attempts from the fakeDB (EndedReader).
	giveUp GiveUp
	ended  bool
}

func newRig(t *testing.T, db *fakeDB, o rigOpts) *rig {
	t.Helper()
	if o.ttl == 0 {
		o.ttl, o.margin, o.interval = 3*time.Second, 500*time.Millisecond, time.Second
	}
	if o.workers == 0 {
		o.workers = 10
	}
	if o.queues == nil {
		o.queues = map[string]QueueConfig{"q": {MaxWorkers: o.workers, TakeOver: true}}
	}
	if o.poll == 0 {
		o.poll = 20 * time.Millisecond
	}
	if o.run == nil {
		o.run = func(context.Context, *leasetype.JobRow) error { return nil }
	}
	if o.giveUp == nil {
		o.giveUp = giveUpLeaseLost
	}
	var ended EndedReader
	if o.ended {
		ended = db
	}
	log := discard
	r := &rig{t: t, db: db, rec: &recorder{}, leas: NewLeases()}
	r.win = &Window{TTL: o.ttl, Margin: o.margin, Clock: NewClock()}
	r.comp = NewCompleter(CompleterConfig{Finisher: db, Leases: r.leas, Window: r.win, Batch: 100, Ended: ended,
		Emit: r.rec.emit, Logger: log})
	r.exec = NewExecutor(ExecutorConfig{
		Owner: "w1", Base: context.Background(), Run: o.run, Classify: classifyRetry, GiveUp: o.giveUp,
		Leases: r.leas, Window: r.win, Completer: r.comp, Emit: r.rec.emit, Logger: log,
	})
	r.hb = NewHeartbeater(HeartbeaterConfig{Renewer: db, Leases: r.leas, Window: r.win, Owner: "w1",
		Interval: o.interval, Emit: r.rec.emit, Logger: log})
	r.prod = NewProducer(ProducerConfig{
		Claimer: db, Queues: o.queues,
		Kinds: []string{"k"}, Owner: "w1", TTL: o.ttl, PollInterval: o.poll, FetchBatch: 100,
		Executor: r.exec, Clock: r.win.Clock, Emit: r.rec.emit, Logger: log,
	})
	for _, s := range []interface{ Start(context.Context) error }{r.hb, r.comp, r.exec, r.prod} {
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { r.stop(5 * time.Second) })
	return r
}

// stop stops the parts in the client's order, with timeout for the
// producer and the executor.
func (r *rig) stop(timeout time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	for _, s := range []interface{ Stop(context.Context) error }{r.prod, r.exec, r.comp, r.hb} {
		_ = s.Stop(ctx)
	}
}

// classifyRetry retries every error after a second.
func classifyRetry(row *leasetype.JobRow, err error) statemachine.Ending {
	return statemachine.Ending{Outcome: leasetype.OutcomeRetried, Delay: time.Second, Error: err.Error()}
}

// giveUpLeaseLost makes a lease the watchdog gave up pending again, as the
// client does outside flagged and reconciling queues with budget left.
func giveUpLeaseLost(*leasetype.JobRow) (statemachine.Ending, bool) {
	return statemachine.Ending{Outcome: leasetype.OutcomeLeaseLost, Error: "gave up"}, true
}

// giveUpNothing is GiveUp in a queue that flags or reconciles expired
// leases: nothing is written, the watcher applies the policy.
func giveUpNothing(*leasetype.JobRow) (statemachine.Ending, bool) {
	return statemachine.Ending{}, false
}

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
