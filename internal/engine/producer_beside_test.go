package engine

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/leasetype"
)

// besideFullClaim is how long the full claims of slowFullClaimer take:
// slow (slowFullClaim), so that each after the first runs beside the loop.
const besideFullClaim = 40 * time.Millisecond

// slowFullClaimer makes full claims (no cursor) slow, as behind a held
// PostgreSQL transaction: they take their rows when sent, as a snapshot
// would, and answer besideFullClaim later. It counts full and cursor
// claims.
type slowFullClaimer struct {
	*fakeDB
	// cursorBlind makes cursor claims find nothing, as when every pending
	// job sorts before the cursor.
	cursorBlind bool
	// started, when set, receives each full claim once it took its rows;
	// the claim then waits to receive from release.
	started, release chan struct{}

	mu           sync.Mutex
	full, cursor int
}

func (c *slowFullClaimer) Claim(ctx context.Context, p *driver.ClaimParams) ([]*leasetype.JobRow, error) {
	c.mu.Lock()
	if p.After == nil {
		c.full++
	} else {
		c.cursor++
	}
	c.mu.Unlock()
	if p.After != nil {
		if c.cursorBlind {
			return nil, nil
		}
		return c.fakeDB.Claim(ctx, p)
	}
	rows, err := c.fakeDB.Claim(ctx, p)
	if c.started != nil {
		c.started <- struct{}{}
		<-c.release
	}
	time.Sleep(besideFullClaim)
	return rows, err
}

// counts returns the full and the cursor claims so far.
func (c *slowFullClaimer) counts() (full, cursor int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.full, c.cursor
}

// startSlowFullRig starts a producer of queue "q" (qc, fetchBatch) over
// cl, with a poll interval (10 s) far longer than the tests below, and
// returns it with the fakeDB's outcomes.
func startSlowFullRig(t *testing.T, cl *slowFullClaimer, qc QueueConfig, fetchBatch int) *Producer {
	t.Helper()
	db := cl.fakeDB
	leas := NewLeases()
	win := &Window{TTL: 3 * time.Second, Margin: 500 * time.Millisecond, Clock: NewClock()}
	rec := &recorder{}
	comp := NewCompleter(CompleterConfig{Finisher: db, Leases: leas, Window: win, Batch: 100, Emit: rec.emit, Logger: discard})
	exec := NewExecutor(ExecutorConfig{Owner: "w1", Base: context.Background(),
		Run:      func(context.Context, *leasetype.JobRow) error { return nil },
		Classify: classifyRetry, GiveUp: giveUpLeaseLost, Leases: leas, Window: win, Completer: comp, Emit: rec.emit, Logger: discard})
	prod := NewProducer(ProducerConfig{Claimer: cl, Queues: map[string]QueueConfig{"q": qc},
		Kinds: []string{"k"}, Owner: "w1", TTL: 3 * time.Second, PollInterval: 10 * time.Second, FetchBatch: fetchBatch,
		Executor: exec, Clock: win.Clock, Emit: rec.emit, Logger: discard})
	for _, s := range []interface{ Start(context.Context) error }{comp, exec, prod} {
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		for _, s := range []interface{ Stop(context.Context) error }{prod, exec, comp} {
			_ = s.Stop(ctx)
		}
	})
	return prod
}

// TestIdleQueueWithSlowFullClaimsStopsClaiming: a queue whose full claims
// are slow, once its jobs are done and a wake-up hint found nothing more,
// makes no claim until the next hint or probe (docs/design.md: idle queues
// cost no claim). The one full claim the hint's short cursor claim has the
// loop woken for runs beside the loop and finds nothing; its end must not
// wake the loop for a cursor claim that would come back short and arm the
// timer for the next full claim, and so on every ten full claims' time.
// Whatever share of the free slots that full claim takes: some, all of
// them (one slot), or all of one claim's (a batch of one).
func TestIdleQueueWithSlowFullClaimsStopsClaiming(t *testing.T) {
	for _, tc := range []struct {
		name       string
		workers    int
		fetchBatch int
	}{
		{"share of the slots", 10, 100},
		{"the only slot", 1, 100},
		{"batch of one", 10, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cl := &slowFullClaimer{fakeDB: newFakeDB(jobIn(1, "q"))}
			prod := startSlowFullRig(t, cl, QueueConfig{MaxWorkers: tc.workers, TakeOver: true}, tc.fetchBatch)
			waitFor(t, "the job claimed", func() bool { return len(cl.outcomes()) == 1 })
			// A hint with nothing to claim (an insert another process
			// claimed first): one cursor claim, and one full claim when
			// due, ten full claims' time after the first one.
			prod.Wake("q")
			time.Sleep(20*besideFullClaim + 200*time.Millisecond)
			f0, c0 := cl.counts()
			time.Sleep(2500 * time.Millisecond)
			f1, c1 := cl.counts()
			if f1 != f0 || c1 != c0 {
				t.Errorf("idle queue, no job, no hint, 2.5 s: %d full and %d cursor claims, want none (%d and %d before)",
					f1-f0, c1-c0, f0, c0)
			}
		})
	}
}

// TestHintDuringSlowFullClaimWakesForTheNext: a job inserted ahead of the
// cursor while a slow full claim runs beside the loop, which that claim
// (sent before) and the cursor claim of its hint cannot see, is claimed by
// the next full claim, which the end of the running one has the loop woken
// for; not a poll interval later by the probe.
func TestHintDuringSlowFullClaimWakesForTheNext(t *testing.T) {
	cl := &slowFullClaimer{fakeDB: newFakeDB(jobIn(1, "q")), cursorBlind: true,
		started: make(chan struct{}), release: make(chan struct{})}
	prod := startSlowFullRig(t, cl, QueueConfig{MaxWorkers: 10, TakeOver: true}, 100)
	fullClaim := func(what string, within time.Duration) {
		t.Helper()
		select {
		case <-cl.started:
		case <-time.After(within):
			t.Fatalf("no full claim %s within %v (poll interval 10 s)", what, within)
		}
	}
	fullClaim("at start", 5*time.Second) // in the loop: it takes job 1
	cl.release <- struct{}{}
	waitFor(t, "the first job claimed", func() bool { return len(cl.outcomes()) == 1 })
	// A hint with nothing to claim arms the timer for the next full
	// claim, which is slow and so runs beside the loop. Held there, it
	// took nothing; job 2 comes after it, ahead of the cursor.
	prod.Wake("q")
	fullClaim("after a hint whose cursor claim came back short", 5*time.Second)
	_, c0 := cl.counts()
	cl.add(jobIn(2, "q"))
	prod.Wake("q")
	waitFor(t, "the cursor claim of the hint", func() bool { _, c := cl.counts(); return c > c0 })
	cl.release <- struct{}{} // the full claim beside the loop ends, with nothing
	fullClaim("after the one the hint came during", 2*time.Second)
	cl.release <- struct{}{}
	waitFor(t, "the job inserted during a full claim beside the loop claimed", func() bool { return len(cl.outcomes()) == 2 })
}
