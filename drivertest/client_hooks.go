package drivertest

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
)

// traceMiddleware is insert middleware that stamps every job's metadata
// with a trace id and records the transactions it saw.
type traceMiddleware struct {
	mu  sync.Mutex
	txs []any
}

func (m *traceMiddleware) Insert(ctx context.Context, tx any, jobs []*leasehold.InsertJob,
	next func(context.Context) ([]*leasehold.InsertResult, error)) ([]*leasehold.InsertResult, error) {
	m.mu.Lock()
	m.txs = append(m.txs, tx)
	m.mu.Unlock()
	for _, j := range jobs {
		j.Opts.Metadata = json.RawMessage(`{"trace":"t-1"}`)
		j.Opts.Priority = 7
	}
	return next(ctx)
}

// testInsertMiddlewareInTx: insert middleware sees the caller's
// transaction and what is inserted, and what it changes is stored, in
// that transaction (gone on rollback); what it breaks is refused before
// any SQL.
func testInsertMiddlewareInTx(e *clientEnv) {
	mw := &traceMiddleware{}
	c := e.newClient(e.d, nil, func(c *leasehold.Config) { c.InsertMiddleware = []leasehold.InsertMiddleware{mw} })
	for _, kind := range e.h.TxKinds {
		e.Run(kind.Name, func(t *testing.T) {
			tx, _, rollback := kind.Begin(t, e.d)
			res, err := c.InsertTx(e.ctx, tx, testArgs{N: 1}, nil)
			if err != nil {
				t.Fatalf("InsertTx: %v", err)
			}
			if mw.txs[len(mw.txs)-1] != tx {
				t.Fatalf("middleware saw tx %v, want the caller's %v", mw.txs[len(mw.txs)-1], tx)
			}
			if err := rollback(); err != nil {
				t.Fatal(err)
			}
			if _, err := c.GetJob(e.ctx, res.Job.ID); !errors.Is(err, leasehold.ErrJobNotFound) {
				t.Fatalf("GetJob after rollback = %v, want ErrJobNotFound", err)
			}
			tx, commit, _ := kind.Begin(t, e.d)
			res, err = c.InsertTx(e.ctx, tx, testArgs{N: 2}, nil)
			if err != nil {
				t.Fatalf("InsertTx: %v", err)
			}
			if err := commit(); err != nil {
				t.Fatal(err)
			}
			assertStamped(t, e, res.Job.ID)
		})
	}
	if _, err := c.InsertBulk(e.ctx, []leasehold.InsertManyParams{{Args: testArgs{N: 3}}}); err != nil {
		e.Fatalf("InsertBulk: %v", err)
	}
	if tx := mw.txs[len(mw.txs)-1]; tx != nil {
		e.Fatalf("InsertBulk's middleware saw tx %v, want nil", tx)
	}
	jobs, err := c.ListJobs(e.ctx, &leasehold.ListParams{Desc: true, Limit: 1})
	if err != nil || len(jobs) != 1 {
		e.Fatalf("ListJobs = %v, %v", jobs, err)
	}
	assertStamped(e.T, e, jobs[0].ID)
	testInsertMiddlewareRechecked(e)
}

func assertStamped(t *testing.T, e *clientEnv, id int64) {
	t.Helper()
	row, err := e.d.GetJob(e.ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var md struct{ Trace string }
	if err := json.Unmarshal(row.Metadata, &md); err != nil || md.Trace != "t-1" || row.Priority != 7 {
		t.Fatalf("job %d: metadata %s priority %d; want the middleware's trace t-1 and priority 7", id, row.Metadata, row.Priority)
	}
}

// testInsertMiddlewareRechecked: a middleware that breaks a job (an empty
// kind, metadata that is not an object) is refused like a caller's input,
// and nothing is inserted.
func testInsertMiddlewareRechecked(e *clientEnv) {
	breaker := leasehold.InsertMiddlewareFunc(func(ctx context.Context, tx any, jobs []*leasehold.InsertJob,
		next func(context.Context) ([]*leasehold.InsertResult, error)) ([]*leasehold.InsertResult, error) {
		jobs[1].Opts.Metadata = json.RawMessage(`[1]`)
		return next(ctx)
	})
	c := e.newClient(e.d, nil, func(c *leasehold.Config) { c.InsertMiddleware = []leasehold.InsertMiddleware{breaker} })
	before, _ := c.ListJobs(e.ctx, nil)
	_, err := c.InsertMany(e.ctx, nil, []leasehold.InsertManyParams{{Args: testArgs{N: 1}}, {Args: testArgs{N: 2}}})
	var bad *leasehold.InvalidInputError
	if !errors.Is(err, leasehold.ErrInvalidArgs) || !errors.As(err, &bad) || bad.Index != 1 {
		e.Fatalf("InsertMany after a breaking middleware = %v, want ErrInvalidArgs at index 1", err)
	}
	if after, _ := c.ListJobs(e.ctx, nil); len(after) != len(before) {
		e.Fatalf("%d jobs after a refused insert, want %d", len(after), len(before))
	}
	dropper := leasehold.InsertMiddlewareFunc(func(ctx context.Context, tx any, jobs []*leasehold.InsertJob,
		next func(context.Context) ([]*leasehold.InsertResult, error)) ([]*leasehold.InsertResult, error) {
		jobs[0] = nil // a broken middleware: no job left to insert
		return next(ctx)
	})
	c = e.newClient(e.d, nil, func(c *leasehold.Config) { c.InsertMiddleware = []leasehold.InsertMiddleware{dropper} })
	if _, err := c.Insert(e.ctx, testArgs{N: 3}, nil); !errors.Is(err, leasehold.ErrInvalidArgs) {
		e.Fatalf("Insert after a middleware dropped the job = %v, want ErrInvalidArgs", err)
	}
	swallow := leasehold.InsertMiddlewareFunc(func(ctx context.Context, tx any, jobs []*leasehold.InsertJob,
		next func(context.Context) ([]*leasehold.InsertResult, error)) ([]*leasehold.InsertResult, error) {
		return nil, nil // neither next's results nor an error
	})
	c = e.newClient(e.d, nil, func(c *leasehold.Config) { c.InsertMiddleware = []leasehold.InsertMiddleware{swallow} })
	if _, err := c.Insert(e.ctx, testArgs{N: 4}, nil); !errors.Is(err, leasehold.ErrMiddlewareResults) {
		e.Fatalf("Insert through a middleware that returned no results = %v, want ErrMiddlewareResults", err)
	}
}

type ctxMark struct{}

// testWorkMiddlewareWrapsHandler: work middleware runs around every
// handler with the job and its live lease, can pass a derived context,
// and its error or panic is the attempt's.
func testWorkMiddlewareWrapsHandler(e *clientEnv) {
	type seen struct {
		owner    string
		attempt  int
		checkErr error
	}
	var mu sync.Mutex
	saw := map[int64]seen{}
	mw := leasehold.WorkMiddlewareFunc(func(ctx context.Context, job *leasehold.JobRow, next func(context.Context) error) error {
		mu.Lock()
		saw[job.ID] = seen{job.LeaseOwner, job.Attempt, leasehold.CheckLease(ctx)}
		mu.Unlock()
		var args testArgs
		_ = json.Unmarshal(job.Args, &args)
		switch args.N {
		case 2:
			return leasehold.Permanent(errors.New("refused by middleware"))
		case 3:
			panic("middleware panic")
		}
		return next(context.WithValue(ctx, ctxMark{}, "marked"))
	})
	marked := make(chan any, 1)
	ws := e.workers(func(ctx context.Context, job *leasehold.Job[testArgs]) error {
		marked <- ctx.Value(ctxMark{})
		return nil
	})
	c := e.newClient(e.d, ws, func(c *leasehold.Config) { c.WorkMiddleware = []leasehold.WorkMiddleware{mw} })
	ok, refused, panicked := e.insertArgs(c, 1), e.insertArgs(c, 2), e.insertArgs(c, 3)
	e.waitState(ok, leasehold.StateCompleted, 10*time.Second)
	if v := <-marked; v != "marked" {
		e.Fatalf("handler saw context value %v, want the middleware's", v)
	}
	if row := e.waitState(refused, leasehold.StateFailed, 10*time.Second); row.LastError != "permanent: refused by middleware" {
		e.Fatalf("middleware-refused job: last error %q", row.LastError)
	}
	e.waitFor("the panicking middleware's job to be retried", 10*time.Second, func() bool {
		row, err := e.d.GetJob(e.ctx, panicked)
		return err == nil && row.LastError != "" && c.Stats().Panics >= 1
	})
	mu.Lock()
	defer mu.Unlock()
	if s := saw[ok]; s.owner != c.Owner() || s.attempt != 1 || s.checkErr != nil {
		e.Fatalf("middleware saw %+v, want the lease of %s, attempt 1, CheckLease nil", s, c.Owner())
	}
}

// insertArgs inserts a test job with N = n.
func (e *clientEnv) insertArgs(c *leasehold.Client, n int) int64 {
	e.Helper()
	res, err := c.Insert(e.ctx, testArgs{N: n}, nil)
	if err != nil {
		e.Fatalf("Insert: %v", err)
	}
	return res.Job.ID
}

// testEventStream: a subscriber sees a job's claimed, started and
// finished events (with outcome and duration), a filtered subscriber only
// its kinds, Stats agrees with the events, and a subscriber that never
// reads slows nothing down: its missed events are counted.
func testEventStream(e *clientEnv) {
	ws := e.workers(func(ctx context.Context, job *leasehold.Job[testArgs]) error {
		time.Sleep(time.Duration(job.Args.N) * time.Millisecond)
		return nil
	})
	c := e.newClient(e.d, ws, nil)
	all, stopAll := c.Subscribe()
	finished, stopFinished := c.Subscribe(leasehold.EventFinished)
	id := e.insertArgs(c, 20)
	var kinds []leasehold.EventKind
	for len(kinds) < 3 {
		select {
		case ev := <-all:
			if ev.Kind == leasehold.EventHeartbeat {
				continue // the client's heartbeats, about no one job
			}
			if ev.Job == nil || ev.Job.ID != id || ev.Time.IsZero() {
				e.Fatalf("event %+v: want job %d with a time", ev, id)
			}
			kinds = append(kinds, ev.Kind)
			if ev.Kind == leasehold.EventFinished && (ev.Outcome != leasehold.OutcomeCompleted || ev.Duration < 20*time.Millisecond) {
				e.Fatalf("finished event: outcome %s duration %v; want completed, at least 20ms", ev.Outcome, ev.Duration)
			}
		case <-time.After(10 * time.Second):
			e.Fatalf("events so far %v; timed out", kinds)
		}
	}
	want := []leasehold.EventKind{leasehold.EventClaimed, leasehold.EventStarted, leasehold.EventFinished}
	for i := range want {
		if kinds[i] != want[i] {
			e.Fatalf("events %v, want %v", kinds, want)
		}
	}
	if ev := <-finished; ev.Kind != leasehold.EventFinished || ev.Job.ID != id {
		e.Fatalf("filtered subscriber got %+v, want job %d finished", ev, id)
	}
	if s := c.Stats(); s.Claimed != 1 || s.Completed != 1 {
		e.Fatalf("Stats %+v, want 1 claimed and 1 completed, as the events say", s)
	}
	stopAll()
	stopAll() // twice is harmless
	if _, open := <-all; open {
		e.Fatal("channel still open after the subscription ended")
	}
	stopFinished()
	testSlowSubscriber(e, c)
}

// testSlowSubscriber: a subscriber that never reads loses events, which
// are counted, and holds nothing back.
func testSlowSubscriber(e *clientEnv, c *leasehold.Client) {
	_, stop := c.Subscribe()
	defer stop()
	n := leasehold.DefaultEventBuffer/3 + 50 // three events each: more than the buffer
	jobs := make([]leasehold.InsertManyParams, n)
	for i := range jobs {
		jobs[i] = leasehold.InsertManyParams{Args: testArgs{}}
	}
	if _, err := c.InsertMany(e.ctx, nil, jobs); err != nil {
		e.Fatal(err)
	}
	e.waitFor("every job completed", time.Minute, func() bool { return c.Stats().Completed == int64(n)+1 })
	if c.Stats().EventsDropped == 0 {
		e.Fatal("no event counted as dropped for a subscriber that never reads")
	}
	roomy, stopRoomy := c.SubscribeBuffered(10 * n)
	defer stopRoomy()
	if _, err := c.InsertMany(e.ctx, nil, jobs); err != nil {
		e.Fatal(err)
	}
	e.waitFor("the second batch completed", time.Minute, func() bool { return c.Stats().Completed == 2*int64(n)+1 })
	if len(roomy) < 3*n {
		e.Fatalf("the roomy subscriber holds %d events, want every one of the batch's %d", len(roomy), 3*n)
	}
}
