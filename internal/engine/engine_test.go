package engine

import (
	"context"
	"errors"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold/internal/statemachine"
	"github.com/leasehold/leasehold/leasetype"
)

func TestClaimedJobsRunAndComplete(t *testing.T) {
	db := newFakeDB(rows(25)...)
	r := newRig(t, db, rigOpts{workers: 7}) // fewer slots than jobs: claims refill freed slots
	waitFor(t, "25 outcomes", func() bool { return len(db.outcomes()) == 25 })
	for id, p := range db.outcomes() {
		if p.Outcome != leasetype.OutcomeCompleted || p.Owner != "w1" || p.Attempt != 1 {
			t.Errorf("job %d: outcome %+v, want completed by w1 attempt 1", id, p)
		}
	}
	want := []leasetype.EventKind{leasetype.EventClaimed, leasetype.EventStarted, leasetype.EventFinished}
	waitFor(t, "every job's events", func() bool { return slices.Equal(r.rec.kinds(25), want) })
	if got := r.rec.kinds(1); !slices.Equal(got, want) {
		t.Fatalf("job 1 events %v, want %v", got, want)
	}
	waitFor(t, "lease set drained", func() bool { return r.leas.Len() == 0 })
	if n := r.exec.Running(); n != 0 {
		t.Fatalf("Running() = %d after every handler returned", n)
	}
}

func TestStartedEventCarriesClaimToStart(t *testing.T) {
	db := newFakeDB(rows(1)...)
	db.claimDelay = 30 * time.Millisecond
	r := newRig(t, db, rigOpts{})
	waitFor(t, "outcome", func() bool { return len(db.outcomes()) == 1 })
	r.rec.mu.Lock()
	defer r.rec.mu.Unlock()
	for _, ev := range r.rec.evs {
		if ev.Kind == leasetype.EventStarted && ev.Duration < 30*time.Millisecond {
			t.Fatalf("started %v after the claim was sent, want at least the 30ms claim reply", ev.Duration)
		}
	}
}

func TestHandlerErrorIsClassified(t *testing.T) {
	db := newFakeDB(rows(1)...)
	newRig(t, db, rigOpts{run: func(context.Context, *leasetype.JobRow) error { return errors.New("boom") }})
	waitFor(t, "outcome", func() bool { return len(db.outcomes()) == 1 })
	p := db.outcomes()[1]
	if p.Outcome != leasetype.OutcomeRetried || p.Delay != time.Second || p.LastError != "boom" || p.AttemptError != "boom" {
		t.Fatalf("outcome %+v, want the classifier's retry after 1s with the error text", p)
	}
}

func TestLateClaimReplyIsNotStarted(t *testing.T) {
	db := newFakeDB(rows(1)...)
	db.claimDelay = 400 * time.Millisecond // past the 300 ms safe window
	var ran atomic.Bool
	r := newRig(t, db, rigOpts{ttl: 600 * time.Millisecond, margin: 300 * time.Millisecond, interval: time.Hour, // no renewal rescues it
		run: func(context.Context, *leasetype.JobRow) error { ran.Store(true); return nil }})
	waitFor(t, "release", func() bool { return len(db.outcomes()) == 1 })
	if ran.Load() {
		t.Fatal("handler ran on a claim whose reply came back past its safe window")
	}
	if p := db.outcomes()[1]; p.Outcome != leasetype.OutcomeReleased {
		t.Fatalf("outcome %v, want released", p.Outcome)
	}
	if got := r.rec.kinds(1); !slices.Contains(got, leasetype.EventNotStarted) || slices.Contains(got, leasetype.EventStarted) {
		t.Fatalf("events %v, want not_started and no started", got)
	}
}

// blockUntilDone is a handler that runs until its context ends and
// returns the context's cause.
func blockUntilDone(started chan<- *leasetype.JobRow) func(ctx context.Context, row *leasetype.JobRow) error {
	return func(ctx context.Context, row *leasetype.JobRow) error {
		started <- row
		<-ctx.Done()
		return context.Cause(ctx)
	}
}

// TestHeartbeatFindsLeaseTakenOver: the renewal that finds a lease gone
// cancels its handler with ErrLeaseLost at once. The lease's hour-long TTL
// keeps the watchdog, which would cancel it too at its safe window, out of
// the test.
func TestHeartbeatFindsLeaseTakenOver(t *testing.T) {
	db, r, held := heldLeases(t, 1)
	l := held[0]
	db.mu.Lock()
	delete(db.held, 1) // another worker took it over
	db.mu.Unlock()
	r.hb.Beat(context.Background())
	if cause := context.Cause(l.Context()); !errors.Is(cause, leasetype.ErrLeaseLost) {
		t.Fatalf("handler's context after the renewal that found its lease gone: %v, want ErrLeaseLost", cause)
	}
	waitFor(t, "lease forgotten", func() bool { return r.leas.Len() == 0 })
	if len(db.outcomes()) != 0 {
		t.Fatalf("wrote %v for a lease that was taken over", db.outcomes())
	}
	if r.rec.count(leasetype.EventLeaseLost) != 1 {
		t.Fatalf("events %v, want one lease_lost", r.rec.kinds(1))
	}
}

func TestHeartbeatCancelRequested(t *testing.T) {
	db := newFakeDB(rows(1)...)
	started := make(chan *leasetype.JobRow, 1)
	r := newRig(t, db, rigOpts{run: blockUntilDone(started)})
	<-started
	db.mu.Lock()
	db.cancelAsked[1] = true
	db.mu.Unlock()
	r.hb.Beat(context.Background())
	if r.rec.count(leasetype.EventHeartbeat) == 0 {
		t.Fatal("a heartbeat that renewed a lease emitted no heartbeat event")
	}
	waitFor(t, "outcome", func() bool { return len(db.outcomes()) == 1 })
	if p := db.outcomes()[1]; p.Outcome != leasetype.OutcomeCancelled || p.AttemptError != "cancelled by operator" {
		t.Fatalf("outcome %+v, want cancelled by operator", p)
	}
}

// TestHeartbeatLockedLeaseNotRenewed: a lease the heartbeat returns
// Locked (its row held by another transaction) is neither lost nor
// renewed: its handler runs on until the watchdog gives the lease up at
// its safe window, while the client's other lease stays renewed.
func TestHeartbeatLockedLeaseNotRenewed(t *testing.T) {
	db := newFakeDB(rows(2)...)
	db.locked[1] = true
	started := make(chan struct{}, 2)
	r := newRig(t, db, rigOpts{ttl: 600 * time.Millisecond, margin: 200 * time.Millisecond, interval: 100 * time.Millisecond,
		run: func(ctx context.Context, row *leasetype.JobRow) error {
			started <- struct{}{}
			if row.ID == 1 {
				<-ctx.Done()
				return ctx.Err()
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(1500 * time.Millisecond): // past job 1's safe window
				return nil
			}
		}})
	<-started
	<-started
	r.hb.Beat(context.Background())
	if n := r.rec.count(leasetype.EventLeaseLost); n != 0 || r.leas.Len() != 2 {
		t.Fatalf("after a heartbeat that found lease 1 locked: %d lease_lost events, %d leases; want 0 and 2", n, r.leas.Len())
	}
	waitFor(t, "both outcomes", func() bool { return len(db.outcomes()) == 2 })
	if p := db.outcomes()[1]; p.Outcome != leasetype.OutcomeLeaseLost {
		t.Fatalf("locked lease's outcome %v, want lease_lost (not renewed past its safe window)", p.Outcome)
	}
	if p := db.outcomes()[2]; p.Outcome != leasetype.OutcomeCompleted {
		t.Fatalf("the other lease's outcome %v, want completed", p.Outcome)
	}
}

func TestWatchdogGivesUpUnrenewedLease(t *testing.T) {
	db := newFakeDB(rows(1)...)
	db.hbErr = errDown
	started := make(chan struct{})
	r := newRig(t, db, rigOpts{ttl: 600 * time.Millisecond, margin: 200 * time.Millisecond, interval: 100 * time.Millisecond,
		run: func(ctx context.Context, _ *leasetype.JobRow) error {
			close(started)
			<-ctx.Done()
			return ctx.Err() // a handler that does not look at the cause
		}})
	<-started
	waitFor(t, "outcome", func() bool { return len(db.outcomes()) == 1 })
	if p := db.outcomes()[1]; p.Outcome != leasetype.OutcomeLeaseLost {
		t.Fatalf("outcome %v, want lease_lost", p.Outcome)
	}
	if r.rec.count(leasetype.EventHeartbeatFailed) == 0 || r.rec.count(leasetype.EventLeaseLost) != 1 {
		t.Fatalf("want heartbeat_failed events and one lease_lost, got %d and %d",
			r.rec.count(leasetype.EventHeartbeatFailed), r.rec.count(leasetype.EventLeaseLost))
	}
}

func TestRefusedOutcomeIsFenceRefused(t *testing.T) {
	db := newFakeDB(rows(2)...)
	db.refuse[2] = true
	r := newRig(t, db, rigOpts{})
	waitFor(t, "both outcomes", func() bool {
		return r.rec.count(leasetype.EventFinished)+r.rec.count(leasetype.EventFenceRefused) == 2
	})
	if got := r.rec.kinds(2); got[len(got)-1] != leasetype.EventFenceRefused {
		t.Fatalf("job 2 events %v, want fence_refused last", got)
	}
	waitFor(t, "lease set drained", func() bool { return r.leas.Len() == 0 })
}

func TestPoisonedOutcomeDoesNotHoldBackItsBatch(t *testing.T) {
	db := newFakeDB()
	db.poison[4] = true
	rec := &recorder{}
	leases := NewLeases()
	win := &Window{TTL: time.Minute, Margin: time.Second, Clock: NewClock()}
	k := NewCompleter(CompleterConfig{Finisher: db, Leases: leases, Window: win, Batch: 100, Emit: rec.emit, Logger: discard})
	for _, row := range rows(6) {
		db.held[row.ID] = true
		l := &Lease{Row: row, window: win}
		leases.add(l)
		k.Submit(l.finish("w1", statemachine.Ending{Outcome: leasetype.OutcomeCompleted})) // queued: one batch at Start
	}
	if err := k.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	defer k.Stop(context.Background())
	waitFor(t, "five written and one dropped", func() bool {
		return len(db.outcomes()) == 5 && rec.count(leasetype.EventOutcomeDropped) == 1
	})
	if _, ok := db.outcomes()[4]; ok {
		t.Fatal("the poisoned outcome was written")
	}
	waitFor(t, "lease set drained", func() bool { return leases.Len() == 0 })
}

func TestStopReleasesRunningHandlers(t *testing.T) {
	db := newFakeDB(rows(3)...)
	started := make(chan *leasetype.JobRow, 3)
	r := newRig(t, db, rigOpts{run: blockUntilDone(started)})
	for range 3 {
		<-started
	}
	r.stop(50 * time.Millisecond) // handlers ignore everything but their context
	out := db.outcomes()
	if len(out) != 3 {
		t.Fatalf("%d outcomes after Stop, want 3 releases", len(out))
	}
	for id, p := range out {
		if p.Outcome != leasetype.OutcomeReleased {
			t.Errorf("job %d: %v, want released", id, p.Outcome)
		}
	}
}

func TestSubmitAfterStopDrops(t *testing.T) {
	db := newFakeDB()
	r := newRig(t, db, rigOpts{})
	r.stop(time.Second)
	l := &Lease{Row: rows(1)[0], window: r.win}
	r.leas.add(l)
	r.comp.Submit(l.finish("w1", statemachine.Ending{Outcome: leasetype.OutcomeCompleted}))
	if r.rec.count(leasetype.EventOutcomeDropped) != 1 || r.leas.Len() != 0 {
		t.Fatal("an outcome submitted after Stop was neither dropped nor forgotten")
	}
}

func TestWakeBeforeStartAndAfterStop(t *testing.T) {
	p := NewProducer(ProducerConfig{Queues: map[string]QueueConfig{"q": {MaxWorkers: 1}}})
	p.Wake("q")
	p.Wake("unknown")
	if err := p.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	p.Wake("q")
}

func TestHeartbeatAfterCommittedCompleteTxIsNotLost(t *testing.T) {
	db := newFakeDB(rows(1)...)
	started := make(chan *leasetype.JobRow, 1)
	r := newRig(t, db, rigOpts{run: blockUntilDone(started)})
	row := <-started
	l := r.leas.Lookup(row.ID, row.Attempt)
	l.MarkCompletedIn(&struct{ tx int }{}) // the handler's CompleteTx committed:
	db.mu.Lock()
	delete(db.held, row.ID) // the job is completed, no longer processing
	db.mu.Unlock()
	r.hb.Beat(context.Background())
	if err := l.Context().Err(); err != nil || r.rec.count(leasetype.EventLeaseLost) != 0 {
		t.Fatalf("after a committed CompleteTx a heartbeat cancelled the handler (%v) or reported a lost lease", err)
	}
}

func TestPoisonedOutcomeAloneDoesNotHoldBackTheQueue(t *testing.T) {
	db := newFakeDB()
	db.poison[1] = true
	r := newCompleterRig(t, db, nil)
	all := rows(6)
	r.submit(all[0]) // the poisoned outcome is its batch alone
	waitFor(t, "the poisoned outcome to fail", func() bool { return r.rec.count(leasetype.EventFinishFailed) >= 1 })
	for _, row := range all[1:] {
		r.submit(row) // queued behind it
	}
	waitFor(t, "five written and one dropped", func() bool {
		return len(db.outcomes()) == 5 && r.rec.count(leasetype.EventOutcomeDropped) == 1
	})
}

// completerRig is a started completer of batches of 100 on a fakeDB,
// stopped when the test ends.
type completerRig struct {
	db     *fakeDB
	rec    *recorder
	leases *Leases
	win    *Window
	k      *Completer
}

// newCompleterRig starts a completer on db with refused as its
// CompleterConfig.Refused.
func newCompleterRig(t *testing.T, db *fakeDB, refused func(error) bool) *completerRig {
	t.Helper()
	r := &completerRig{db: db, rec: &recorder{}, leases: NewLeases()}
	r.win = &Window{TTL: time.Minute, Margin: time.Second, Clock: NewClock()}
	r.k = NewCompleter(CompleterConfig{Finisher: db, Leases: r.leases, Window: r.win, Batch: 100,
		Refused: refused, Emit: r.rec.emit, Logger: discard})
	if err := r.k.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.k.Stop(context.Background()) })
	return r
}

// submit queues the completed outcome of a new lease of row, held in db.
func (r *completerRig) submit(row *leasetype.JobRow) {
	submitCompleted(r.k, r.db, r.leases, r.win, row)
}

// submitCompleted holds a new lease of row in db and leases, and submits
// its completed outcome to k.
func submitCompleted(k *Completer, db *fakeDB, leases *Leases, win *Window, row *leasetype.JobRow) {
	db.mu.Lock()
	db.held[row.ID] = true
	db.mu.Unlock()
	l := &Lease{Row: row, window: win}
	leases.add(l)
	k.Submit(l.finish("w1", statemachine.Ending{Outcome: leasetype.OutcomeCompleted}))
}

// TestOutcomeFailingOnTheWayIsNotGivenUp: an outcome whose statements
// keep failing with an error that is no refusal (after a server restart,
// the pool's dead connections) while the database accepts the outcomes
// behind it is kept and written once its statements get through, not
// given up to run its job again.
func TestOutcomeFailingOnTheWayIsNotGivenUp(t *testing.T) {
	db := newFakeDB()
	db.flaky[1] = true
	r := newCompleterRig(t, db, refusedUnlessFlaky)
	all := rows(6)
	r.submit(all[0]) // alone in its batch, failing on the way
	waitFor(t, "the outcome to fail", func() bool { return r.rec.count(leasetype.EventFinishFailed) >= 1 })
	for _, row := range all[1:] {
		r.submit(row) // accepted behind it
	}
	waitFor(t, "the five behind it written, and it retried past the give-up rule", func() bool {
		return len(db.outcomes()) == 5 && r.rec.count(leasetype.EventFinishFailed) >= 2*splitAfter
	})
	if n := r.rec.count(leasetype.EventOutcomeDropped); n != 0 {
		t.Fatalf("%d outcomes given up on an error that is no refusal", n)
	}
	db.mu.Lock()
	db.flaky[1] = false
	db.mu.Unlock()
	waitFor(t, "the outcome written once its statements get through", func() bool {
		_, ok := db.outcomes()[1]
		return ok && r.leases.Len() == 0
	})
}

// TestOneHeartbeatRenewsEveryLease: one renewal is one statement for all
// of the client's leases, whatever their number.
func TestOneHeartbeatRenewsEveryLease(t *testing.T) {
	db, r, _ := heldLeases(t, 5)
	r.hb.Beat(context.Background())
	db.mu.Lock()
	got := slices.Clone(db.heartbeats)
	db.mu.Unlock()
	if !slices.Equal(got, []int{5}) {
		t.Fatalf("heartbeat statements of one renewal of 5 leases, by their leases: %v, want [5]", got)
	}
}
