package leaseholdprom_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	leaseholdprom "github.com/leasehold/leasehold/contrib/prometheus"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/sqlitedriver/sqlitetest"
)

// TestFlaggedOutcome: a reconcile job that gives up (a permanent error)
// is flagged stuck, counted in Stats().Flagged and not in Failed; the
// finished counter agrees, counting it under outcome="flagged", not
// "failed".
func TestFlaggedOutcome(t *testing.T) {
	ctx := t.Context()
	drv := sqlitetest.Open(t)
	workers := leasehold.NewWorkers()
	if err := leasehold.AddWorker(workers, handler(nil)); err != nil {
		t.Fatal(err)
	}
	if err := leasehold.AddWorker(workers, leasehold.WorkFunc[leasehold.ReconcileArgs](
		func(context.Context, *leasehold.Job[leasehold.ReconcileArgs]) error {
			return leasehold.Permanent(errors.New("provider unreachable"))
		})); err != nil {
		t.Fatal(err)
	}
	// A job of queue pay whose worker died, holding its lease.
	res, err := drv.Insert(ctx, nil, []*driver.InsertParams{{Kind: "test.job", Queue: "pay", Args: []byte(`{"do":"complete"}`), MaxAttempts: 3}})
	if err != nil {
		t.Fatal(err)
	}
	if j, err := drv.ClaimByID(ctx, &driver.ClaimByIDParams{ID: res[0].Job.ID, Owner: "dead", TTL: 200 * time.Millisecond}); err != nil || j == nil {
		t.Fatalf("claim as a dead worker: %v, %v", j, err)
	}
	c, reg, _ := metricsClient(t, leasehold.Config{
		Driver: drv, Workers: workers, PollInterval: 20 * time.Millisecond, WatcherInterval: 100 * time.Millisecond,
		Queues: map[string]leasehold.QueueConfig{"pay": {Reconcile: &leasehold.ReconcilePolicy{Queue: "rec"}}, "rec": {}},
	}, leaseholdprom.Options{QueueStatsInterval: -1})
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the reconcile job flagged", func() bool { return c.Stats().Flagged == 1 })
	rec := func(outcome string) map[string]string {
		return map[string]string{"queue": "rec", "kind": leasehold.ReconcileKind, "outcome": outcome}
	}
	eventually(t, "the flagged job counted", func() bool {
		return total(gather(t, reg, "leasehold_jobs_finished_total")) == 1
	})
	st := c.Stats()
	if got, _ := valueOf(t, reg, "leasehold_jobs_finished_total", rec("flagged")); got != float64(st.Flagged) {
		t.Errorf(`finished{outcome="flagged"} = %v, want Stats().Flagged = %d`, got, st.Flagged)
	}
	if got, _ := valueOf(t, reg, "leasehold_jobs_finished_total", rec("failed")); got != float64(st.Failed) {
		t.Errorf(`finished{outcome="failed"} = %v, want Stats().Failed = %d`, got, st.Failed)
	}
}
