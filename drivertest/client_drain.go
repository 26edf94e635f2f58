package drivertest

import (
	"context"
	"sync"
	"time"

	"github.com/leasehold/leasehold"
)

const (
	drainJobs    = 10_000
	drainClients = 8
)

// testCompetingWorkers: 8 clients with distinct owners, half on a second
// driver (another pool or file handle), drain 10,000 jobs. No job is lost,
// none runs or completes twice.
func testCompetingWorkers(e *clientEnv) {
	producer := e.newClient(e.d, nil, nil)
	batch := make([]leasehold.InsertManyParams, drainJobs)
	for i := range batch {
		batch[i] = leasehold.InsertManyParams{Args: testArgs{N: i}}
	}
	if n, err := producer.InsertBulk(e.ctx, batch); err != nil || n != drainJobs {
		e.Fatalf("InsertBulk = %d, %v; want %d", n, err, drainJobs)
	}
	var mu sync.Mutex
	runs := map[int64]int{}
	owners := map[string]bool{}
	ws := e.workers(func(_ context.Context, job *leasehold.Job[testArgs]) error {
		mu.Lock()
		runs[job.ID]++
		owners[job.LeaseOwner] = true
		mu.Unlock()
		return nil
	})
	second := e.h.OpenSecond(e.T, e.d)
	clients := make([]*leasehold.Client, drainClients)
	for i := range clients {
		d := e.d
		if i%2 == 1 {
			d = second
		}
		clients[i] = e.newClient(d, ws, func(c *leasehold.Config) {
			// A realistic TTL: this test is about racing claims, not expiry.
			c.LeaseTTL = leasehold.DefaultLeaseTTL
			c.Queues = map[string]leasehold.QueueConfig{leasehold.DefaultQueue: {MaxWorkers: 16}}
		})
	}
	e.waitFor("all jobs completed", 90*time.Second, func() bool {
		return e.countState(leasehold.StateCompleted) == drainJobs
	})
	// The completer counts an outcome just after writing it: the last
	// batch may be in the database a moment before it is in Stats.
	completedBy := func() (n int64) {
		for _, c := range clients {
			n += c.Stats().Completed
		}
		return n
	}
	e.waitFor("the clients to count every job completed", 10*time.Second, func() bool { return completedBy() >= drainJobs })
	completed := completedBy()
	mu.Lock()
	defer mu.Unlock()
	if len(runs) != drainJobs {
		e.Fatalf("%d distinct jobs ran, want %d", len(runs), drainJobs)
	}
	for id, n := range runs {
		if n != 1 {
			e.Fatalf("job %d ran %d times, want once; history %s", id, n, fmtHistory(e.history(id)))
		}
	}
	if completed != drainJobs {
		e.Fatalf("clients completed %d jobs in total, want %d", completed, drainJobs)
	}
	if len(owners) < 2 {
		e.Fatalf("only %d owners took part; want competing workers", len(owners))
	}
	e.checkSampleHistory(runs)
}

// checkSampleHistory checks a few jobs' history: one attempt, completed.
func (e *clientEnv) checkSampleHistory(runs map[int64]int) {
	e.Helper()
	checked := 0
	for id := range runs {
		if checked == 25 {
			return
		}
		checked++
		row, err := e.d.GetJob(e.ctx, id)
		if err != nil {
			e.Fatalf("GetJob: %v", err)
		}
		h := e.history(id)
		if row.Attempt != 1 || len(h) != 1 || h[0].Outcome != leasehold.OutcomeCompleted {
			e.Fatalf("job %d: attempt %d, history %+v; want one completed attempt", id, row.Attempt, h)
		}
	}
}

// countState counts jobs in state across queues.
func (e *clientEnv) countState(state leasehold.JobState) int64 {
	e.Helper()
	qs, err := e.d.QueueStats(e.ctx)
	if err != nil {
		e.Fatalf("QueueStats: %v", err)
	}
	var n int64
	for _, q := range qs {
		n += q.Counts[state]
	}
	return n
}
