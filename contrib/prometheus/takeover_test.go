package leaseholdprom_test

import (
	"context"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	leaseholdprom "github.com/leasehold/leasehold/contrib/prometheus"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/pgdriver/pgtest"
	"github.com/leasehold/leasehold/sqlitedriver/sqlitetest"
)

// TestTakenOverCounted: a worker dies holding a lease, and a client's
// claim takes the expired lease over before any watcher runs. The claim
// ended attempt 1 as lease_expired, and the client counts it like the
// watcher's rescue of an expired lease: in the per-minute totals
// (Client.Throughput, lease_expired), in Stats.TakenOver and in
// leasehold_leases_taken_over_total. On SQLite, and on PostgreSQL when
// LEASEHOLD_TEST_DATABASE_URL is set.
func TestTakenOverCounted(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) { testTakenOverCounted(t, sqlitetest.Open(t)) })
	t.Run("postgres", func(t *testing.T) { testTakenOverCounted(t, pgtest.Open(t)) })
}

func testTakenOverCounted(t *testing.T, drv driver.Driver) {
	ctx := t.Context()
	workers := leasehold.NewWorkers()
	if err := leasehold.AddWorker(workers, handler(nil)); err != nil {
		t.Fatal(err)
	}
	c, reg, _ := metricsClient(t, leasehold.Config{
		Driver: drv, Workers: workers, PollInterval: 20 * time.Millisecond, DisableWatcher: true,
	}, leaseholdprom.Options{QueueStatsInterval: -1})
	var taken []leasehold.Event
	events, unsubscribe := c.Subscribe(leasehold.EventTakenOver)
	defer unsubscribe()
	res, err := c.Insert(ctx, testArgs{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	dead, err := drv.ClaimByID(ctx, &driver.ClaimByIDParams{ID: res.Job.ID, Owner: "dead-worker", TTL: time.Millisecond})
	if err != nil || dead == nil {
		t.Fatalf("claim as the dead worker: %v %v", dead, err)
	}
	eventually(t, "the dead worker's lease to expire", func() bool {
		now, err := drv.Now(ctx)
		return err == nil && now.After(dead.LeaseUntil)
	})
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the job completed", func() bool {
		done, _ := valueOf(t, reg, "leasehold_jobs_finished_total",
			map[string]string{"queue": "default", "kind": "test.job", "outcome": "completed"})
		return done == 1
	})
	if err := c.Stop(context.Background()); err != nil {
		t.Fatal(err)
	}
	for len(events) > 0 {
		taken = append(taken, <-events)
	}
	if len(taken) != 1 || taken[0].Job == nil || taken[0].Job.ID != res.Job.ID || taken[0].Job.Attempt != 2 ||
		!taken[0].Job.TakenOver {
		t.Errorf("EventTakenOver events = %+v, want one, of job %d's attempt 2", taken, res.Job.ID)
	}
	if n := c.Stats().TakenOver; n != 1 {
		t.Errorf("Stats().TakenOver = %d, want 1", n)
	}
	bs, err := c.Throughput(ctx, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	counts := map[leasehold.Outcome]int64{}
	for _, b := range bs {
		counts[b.Outcome] += b.Jobs
	}
	want := map[leasehold.Outcome]int64{leasehold.OutcomeLeaseExpired: 1, leasehold.OutcomeCompleted: 1}
	for o, n := range want {
		if counts[o] != n {
			t.Errorf("Throughput %s = %d, want %d (all: %v)", o, counts[o], n, counts)
		}
	}
	eventually(t, "the takeover counted in leasehold_leases_taken_over_total", func() bool {
		n, _ := valueOf(t, reg, "leasehold_leases_taken_over_total", map[string]string{"queue": "default", "kind": "test.job"})
		return n == 1
	})
}
