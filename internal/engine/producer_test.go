package engine

import (
	"context"
	"errors"
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

// TestSlowProbesSpacedOut: a probe that takes 30 ms, with a poll interval
// of 5 ms, runs about every 300 ms (probeShare times its duration), not
// back to back.
func TestSlowProbesSpacedOut(t *testing.T) {
	db := newFakeDB()
	db.probeDelay = 30 * time.Millisecond
	newRig(t, db, rigOpts{poll: 5 * time.Millisecond})
	time.Sleep(time.Second)
	if _, probes := db.calls(); probes > 6 {
		t.Fatalf("%d probes of 30 ms each in one second, want at most 6 (one per 300 ms)", probes)
	}
}

// TestBusyQueuesAllProgress: 50 queues of one slot each, each with more
// jobs than that, all progress together: handlers hold their slot until
// released round by round, and in every round each queue starts its next
// job. No queue waits for others to drain.
func TestBusyQueuesAllProgress(t *testing.T) {
	const queues, rounds = 50, 3
	db := newFakeDB()
	var (
		mu      sync.Mutex
		started = map[string]int{}
		release = make([]chan struct{}, rounds)
	)
	for r := range release {
		release[r] = make(chan struct{})
	}
	run := func(ctx context.Context, row *leasetype.JobRow) error {
		mu.Lock()
		started[row.Queue]++
		r := started[row.Queue] - 1
		mu.Unlock()
		select {
		case <-release[r]:
		case <-ctx.Done():
		}
		return nil
	}
	for i := range queues * rounds {
		db.add(jobIn(int64(i+1), fmt.Sprintf("q%04d", i%queues)))
	}
	newRig(t, db, rigOpts{queues: manyQueues(queues, 1), run: run})
	for r := range rounds {
		waitFor(t, fmt.Sprintf("every queue to start its job %d", r+1), func() bool {
			mu.Lock()
			defer mu.Unlock()
			n := 0
			for _, k := range started {
				if k == r+1 {
					n++
				}
			}
			return n == queues
		})
		close(release[r])
	}
}

// TestClaimFailuresEmitted: a claim or probe that fails emits
// EventClaimFailed with its error, so that metrics and a supervising
// process see what was only logged; once the database answers again the
// job is claimed.
func TestClaimFailuresEmitted(t *testing.T) {
	db := newFakeDB(rows(1)...)
	db.claimErr, db.probeErr = errDown, errFlaky
	r := newRig(t, db, rigOpts{run: func(context.Context, *leasetype.JobRow) error { return nil }})
	r.prod.Wake("q") // a claim, beside the probes
	failed := func(want error) bool {
		r.rec.mu.Lock()
		defer r.rec.mu.Unlock()
		for _, ev := range r.rec.evs {
			if ev.Kind == leasetype.EventClaimFailed && errors.Is(ev.Err, want) {
				return true
			}
		}
		return false
	}
	waitFor(t, "a failed claim and a failed probe to be reported", func() bool {
		return failed(errDown) && failed(errFlaky)
	})
	db.mu.Lock()
	db.claimErr, db.probeErr = nil, nil
	db.mu.Unlock()
	waitFor(t, "the job to be claimed once claims succeed", func() bool {
		return r.rec.count(leasetype.EventClaimed) == 1
	})
}
