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

// TestProbeAsksAsTheClaimingOwner: the probe names the owner its claims
// lease to, so that the driver leaves that owner's own expired leases out
// of the work it finds, as the claims never take them over.
func TestProbeAsksAsTheClaimingOwner(t *testing.T) {
	db := newFakeDB()
	claimed := make(chan *leasetype.JobRow, 1)
	newRig(t, db, rigOpts{run: func(_ context.Context, row *leasetype.JobRow) error {
		claimed <- row
		return nil
	}})
	waitFor(t, "a probe", func() bool { _, probes := db.calls(); return probes >= 1 })
	db.add(jobIn(1, "q"))
	var row *leasetype.JobRow
	select {
	case row = <-claimed:
	case <-time.After(5 * time.Second):
		t.Fatal("the job was not claimed")
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.probeOwner == "" || db.probeOwner != row.LeaseOwner {
		t.Fatalf("probe asked as owner %q, claims lease to %q", db.probeOwner, row.LeaseOwner)
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

// TestOneSlowProbeNotSpacedOut: one probe that takes 300 ms (a new
// connection after a terminated session, a moment of load) among quick
// ones puts off the next by one poll interval, not by probeShare times its
// duration: the probes go on every 5 ms.
func TestOneSlowProbeNotSpacedOut(t *testing.T) {
	db := newFakeDB()
	db.probeDelays = []time.Duration{0, 300 * time.Millisecond}
	newRig(t, db, rigOpts{poll: 5 * time.Millisecond})
	time.Sleep(time.Second)
	if _, probes := db.calls(); probes < 10 {
		t.Fatalf("%d probes in one second after one of 300 ms, want them every 5 ms once it ended (at least 10)", probes)
	}
}

// TestProbeGap: the next probe is due one poll interval after the last
// one started, or probeShare times the shorter of the last two durations
// when that is longer; a failed probe is tried again after one interval.
func TestProbeGap(t *testing.T) {
	const ms = time.Millisecond
	for _, c := range []struct {
		took, prev time.Duration
		ok         bool
		want       time.Duration
	}{
		{1 * ms, 1 * ms, true, 100 * ms},        // quick: the poll interval
		{300 * ms, 1 * ms, true, 100 * ms},      // one slow probe among quick ones
		{300 * ms, 0, true, 100 * ms},           // the first probe, slow (a new connection)
		{30 * ms, 50 * ms, true, 300 * ms},      // two slow in a row (a held transaction)
		{50 * ms, 30 * ms, true, 300 * ms},      // the shorter of the two
		{3000 * ms, 3000 * ms, false, 100 * ms}, // failed
	} {
		if got := probeGap(c.took, c.prev, c.ok, 100*ms); got != c.want {
			t.Errorf("probeGap(%v, %v, %v) = %v, want %v", c.took, c.prev, c.ok, got, c.want)
		}
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
