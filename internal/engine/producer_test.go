package engine

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold/leasetype"
)

// manyQueues returns n queues of workers slots each, named q0000...
func manyQueues(n, workers int) map[string]QueueConfig {
	qs := make(map[string]QueueConfig, n)
	for i := range n {
		qs[fmt.Sprintf("q%04d", i)] = QueueConfig{MaxWorkers: workers, TakeOver: true}
	}
	return qs
}

// jobIn returns a pending row of queue.
func jobIn(id int64, queue string) *leasetype.JobRow {
	return &leasetype.JobRow{ID: id, Kind: "k", Queue: queue, State: leasetype.StatePending, MaxAttempts: 3}
}

// TestIdleQueuesCostOneProbe: a producer of 1,000 queues with no jobs
// claims from none of them: it only probes, once per poll interval for all
// of them; a job that then appears in one queue is claimed through the
// probe, by one claim of that queue.
func TestIdleQueuesCostOneProbe(t *testing.T) {
	db := newFakeDB()
	done := make(chan int64, 1)
	newRig(t, db, rigOpts{queues: manyQueues(1000, 2), run: func(_ context.Context, row *leasetype.JobRow) error {
		done <- row.ID
		return nil
	}})
	waitFor(t, "five probes", func() bool { _, probes := db.calls(); return probes >= 5 })
	if claims, probes := db.calls(); claims != 0 {
		t.Fatalf("%d claims in %d probes of idle queues, want none", claims, probes)
	}
	db.add(jobIn(1, "q0421"))
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the job of an idle queue was not claimed through the probe")
	}
	if claims, _ := db.calls(); claims != 1 {
		t.Fatalf("%d claims for one job in one queue, want 1", claims)
	}
}

// TestBusyQueuesAllProgress: 50 queues with more jobs than slots each,
// run by slow handlers, all progress together: by the time the first
// queue has started all its jobs, every queue has started some. No queue
// waits for another to drain.
func TestBusyQueuesAllProgress(t *testing.T) {
	const queues, perQueue = 50, 5
	db := newFakeDB()
	var (
		mu      sync.Mutex
		started = map[string]int{}
		first   map[string]int // started when a queue first started all
	)
	run := func(ctx context.Context, row *leasetype.JobRow) error {
		mu.Lock()
		started[row.Queue]++
		if started[row.Queue] == perQueue && first == nil {
			first = make(map[string]int, len(started))
			for q, n := range started {
				first[q] = n
			}
		}
		mu.Unlock()
		time.Sleep(50 * time.Millisecond)
		return nil
	}
	id := int64(0)
	for i := range queues * perQueue {
		id++
		db.add(jobIn(id, fmt.Sprintf("q%04d", i%queues)))
	}
	newRig(t, db, rigOpts{queues: manyQueues(queues, 1), run: run})
	waitFor(t, "a queue to start all its jobs", func() bool { mu.Lock(); defer mu.Unlock(); return first != nil })
	mu.Lock()
	defer mu.Unlock()
	if len(first) != queues {
		t.Fatalf("when one queue had started its %d jobs, only %d of %d queues had started any: %v",
			perQueue, len(first), queues, first)
	}
}
