package drivertest

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// probeCounter wraps a driver and counts its Claim and ClaimableQueues
// calls. It is not a Notifier: a client on it learns of other processes'
// inserts by polling only.
type probeCounter struct {
	driver.Driver
	claims, probes atomic.Int64
}

// Claim counts and forwards.
func (p *probeCounter) Claim(ctx context.Context, cp *driver.ClaimParams) ([]*leasehold.JobRow, error) {
	p.claims.Add(1)
	return p.Driver.Claim(ctx, cp)
}

// ClaimableQueues counts and forwards.
func (p *probeCounter) ClaimableQueues(ctx context.Context, cp *driver.ClaimableParams) ([]string, error) {
	p.probes.Add(1)
	return p.Driver.ClaimableQueues(ctx, cp)
}

// idleQueues returns n queues of workers slots each, named idle0000...
func idleQueues(n, workers int) map[string]leasehold.QueueConfig {
	qs := make(map[string]leasehold.QueueConfig, n)
	for i := range n {
		qs[fmt.Sprintf("idle%04d", i)] = leasehold.QueueConfig{MaxWorkers: workers}
	}
	return qs
}

// testIdleQueuesPolledByProbe: a client serving 1,500 queues with no jobs
// and no wake-up hints makes no Claim at all, only one probe per poll
// interval; a job another process then inserts into one of the queues is
// picked up through the probe.
func testIdleQueuesPolledByProbe(e *clientEnv) {
	d := &probeCounter{Driver: e.d}
	picked := make(chan int64, 1)
	e.newClient(d, e.workers(func(_ context.Context, job *leasehold.Job[testArgs]) error {
		picked <- job.ID
		return nil
	}), func(c *leasehold.Config) {
		c.Queues, c.PollInterval = idleQueues(1500, 2), 50*time.Millisecond
	})
	e.waitFor("five probes", 30*time.Second, func() bool { return d.probes.Load() >= 5 })
	if n := d.claims.Load(); n != 0 {
		e.Fatalf("%d claims by a client whose %d queues have no jobs, in %d probes; want none",
			n, 1500, d.probes.Load())
	}
	other := e.newClient(e.h.OpenSecond(e.T, e.d), nil, nil)
	id := e.insertOpts(other, &leasehold.InsertOpts{Queue: "idle0777"})
	select {
	case got := <-picked:
		if got != id {
			e.Fatalf("picked job %d, want %d", got, id)
		}
	case <-time.After(30 * time.Second):
		e.Fatalf("job %d of an idle queue not picked up by the probe", id)
	}
}

// testBusyQueuesClaimedFairly: 50 queues of one slot each, each with
// more jobs than that, all progress together: handlers hold their slot
// until released round by round, and in every round each queue starts its
// next job. No queue waits for others to drain.
func testBusyQueuesClaimedFairly(e *clientEnv) {
	const queues, rounds = 50, 3
	var (
		mu      sync.Mutex
		started = map[string]int{}
		release = make([]chan struct{}, rounds)
	)
	for r := range release {
		release[r] = make(chan struct{})
	}
	ws := e.workers(func(ctx context.Context, job *leasehold.Job[testArgs]) error {
		mu.Lock()
		started[job.Queue]++
		r := started[job.Queue] - 1
		mu.Unlock()
		if r < rounds {
			select {
			case <-release[r]:
			case <-ctx.Done():
			}
		}
		return nil
	})
	inserter := e.newClient(e.d, nil, nil)
	for i := range queues * rounds {
		e.insertOpts(inserter, &leasehold.InsertOpts{Queue: fmt.Sprintf("idle%04d", i%queues)})
	}
	// A long lease: a handler's slot must not free by a lost lease while
	// it waits for its round.
	e.newClient(e.d, ws, func(c *leasehold.Config) { c.Queues, c.LeaseTTL = idleQueues(queues, 1), time.Minute })
	for r := range rounds {
		e.waitFor(fmt.Sprintf("every queue to start its job %d", r+1), time.Minute, func() bool {
			mu.Lock()
			defer mu.Unlock()
			n := 0
			for _, k := range started {
				if k > r+1 {
					e.Fatalf("a queue of one slot started job %d while its job %d held the slot", k, r+1)
				}
				if k == r+1 {
					n++
				}
			}
			return n == queues
		})
		close(release[r])
	}
}
