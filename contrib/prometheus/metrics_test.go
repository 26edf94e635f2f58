package leaseholdprom_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/leasehold/leasehold"
	leaseholdprom "github.com/leasehold/leasehold/contrib/prometheus"
	"github.com/leasehold/leasehold/sqlitedriver/sqlitetest"
)

// TestOutcomes runs jobs to every outcome a handler can choose, in two
// queues, and reads the counters and histograms back from the registry.
func TestOutcomes(t *testing.T) {
	ctx := t.Context()
	workers := leasehold.NewWorkers()
	if err := leasehold.AddWorker(workers, handler(nil)); err != nil {
		t.Fatal(err)
	}
	c, reg, _ := metricsClient(t, leasehold.Config{
		Driver: sqlitetest.Open(t), Workers: workers, PollInterval: 20 * time.Millisecond, DisableWatcher: true,
		RetryPolicy: &leasehold.ExponentialBackoff{Base: time.Millisecond, Max: time.Millisecond},
		Queues:      map[string]leasehold.QueueConfig{"default": {}, "other": {}},
	}, leaseholdprom.Options{QueueStatsInterval: -1})
	once := &leasehold.InsertOpts{UniqueKey: "once"}
	other := &leasehold.InsertOpts{Queue: "other"}
	if _, err := c.InsertMany(ctx, nil, []leasehold.InsertManyParams{
		{Args: testArgs{Do: "complete"}, Opts: once}, {Args: testArgs{Do: "retry"}},
		{Args: testArgs{Do: "snooze"}}, {Args: testArgs{Do: "cancel"}},
	}); err != nil {
		t.Fatal(err)
	}
	if res, err := c.Insert(ctx, testArgs{Do: "complete"}, once); err != nil || !res.Duplicate {
		t.Fatalf("second insert of a unique key = %+v, %v; want a duplicate", res, err)
	}
	if _, err := c.Insert(ctx, testArgs{Do: "fail"}, other); err != nil {
		t.Fatal(err)
	}
	if _, err := c.InsertBulk(ctx, []leasehold.InsertManyParams{
		{Args: testArgs{Do: "complete"}, Opts: other}, {Args: testArgs{Do: "complete"}, Opts: other},
	}); err != nil {
		t.Fatal(err)
	}
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	eventually(t, "nine attempts finished", func() bool { return total(gather(t, reg, "leasehold_jobs_finished_total")) == 9 })

	checkSeries(t, reg, "leasehold_jobs_inserted_total", []string{"queue", "kind"},
		"{queue=default,kind=test.job} 4\n{queue=other,kind=test.job} 3")
	checkSeries(t, reg, "leasehold_jobs_claimed_total", []string{"queue", "kind"},
		"{queue=default,kind=test.job} 6\n{queue=other,kind=test.job} 3")
	checkSeries(t, reg, "leasehold_jobs_finished_total", []string{"queue", "kind", "outcome"}, `{queue=default,kind=test.job,outcome=cancelled} 1
{queue=default,kind=test.job,outcome=completed} 3
{queue=default,kind=test.job,outcome=failed} 0
{queue=default,kind=test.job,outcome=lease_lost} 0
{queue=default,kind=test.job,outcome=released} 0
{queue=default,kind=test.job,outcome=retried} 1
{queue=default,kind=test.job,outcome=snoozed} 1
{queue=other,kind=test.job,outcome=cancelled} 0
{queue=other,kind=test.job,outcome=completed} 2
{queue=other,kind=test.job,outcome=failed} 1
{queue=other,kind=test.job,outcome=lease_lost} 0
{queue=other,kind=test.job,outcome=released} 0
{queue=other,kind=test.job,outcome=retried} 0
{queue=other,kind=test.job,outcome=snoozed} 0`)
	// Every attempt ran its handler once and started after its claim.
	checkSeries(t, reg, "leasehold_handler_duration_seconds", []string{"queue", "kind"},
		"{queue=default,kind=test.job} 6\n{queue=other,kind=test.job} 3")
	checkSeries(t, reg, "leasehold_claim_to_start_seconds", []string{"queue"},
		"{queue=default} 6\n{queue=other} 3")
	for _, name := range []string{"leasehold_leases_lost_total", "leasehold_fenced_writes_refused_total",
		"leasehold_outcomes_dropped_total", "leasehold_jobs_not_started_total"} {
		if n := total(gather(t, reg, name)); n != 0 {
			t.Errorf("%s = %v, want 0", name, n)
		}
	}
	if v, ok := valueOf(t, reg, "leasehold_jobs_running", map[string]string{}); !ok || v != 0 {
		t.Errorf("leasehold_jobs_running = %v (present %v), want 0 once every job finished", v, ok)
	}
	checkLabels(t, reg)
}

// TestLeaseLostAndRefused takes a running job's lease away: the watcher
// returns it to pending, the heartbeat finds it gone and cancels the
// handler, whose late completion the database refuses. It also reads the
// running gauge and the heartbeat histogram while the job runs.
func TestLeaseLostAndRefused(t *testing.T) {
	ctx := t.Context()
	drv := sqlitetest.Open(t)
	held := make(chan struct{}, 1)
	workers := leasehold.NewWorkers()
	if err := leasehold.AddWorker(workers, handler(held)); err != nil {
		t.Fatal(err)
	}
	c, reg, _ := metricsClient(t, leasehold.Config{
		Driver: drv, Workers: workers, LeaseTTL: 2 * time.Second, PollInterval: 20 * time.Millisecond,
		DisableWatcher: true, Queues: map[string]leasehold.QueueConfig{"default": {MaxWorkers: 1}},
	}, leaseholdprom.Options{QueueStatsInterval: -1})
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Insert(ctx, testArgs{Do: "hold"}, nil); err != nil {
		t.Fatal(err)
	}
	<-held
	none := map[string]string{}
	eventually(t, "one job running and a heartbeat", func() bool {
		running, _ := valueOf(t, reg, "leasehold_jobs_running", none)
		beats, _ := valueOf(t, reg, "leasehold_heartbeat_duration_seconds", none)
		return running == 1 && beats >= 1
	})
	// Expire the lease in the database and let another client's watcher
	// move it (c's own leaves the leases c holds alone); a heartbeat may
	// renew it first, so try again until a pass moves it.
	other, otherReg, _ := metricsClient(t, leasehold.Config{Driver: drv}, leaseholdprom.Options{QueueStatsInterval: -1})
	eventually(t, "the watcher to rescue the job", func() bool {
		if _, err := drv.DB().ExecContext(ctx, `UPDATE leasehold_jobs SET lease_until = 0 WHERE status = 'processing'`); err != nil {
			t.Fatal(err)
		}
		moved, err := other.RescueExpired(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return len(moved) == 1
	})
	job := map[string]string{"queue": "default", "kind": "test.job"}
	eventually(t, "lease lost, late write refused, second attempt completed", func() bool {
		lost, _ := valueOf(t, reg, "leasehold_leases_lost_total", job)
		refused, _ := valueOf(t, reg, "leasehold_fenced_writes_refused_total", job)
		done, _ := valueOf(t, reg, "leasehold_jobs_finished_total",
			map[string]string{"queue": "default", "kind": "test.job", "outcome": "completed"})
		return lost == 1 && refused == 1 && done == 1
	})
	checkSeries(t, otherReg, "leasehold_jobs_rescued_total", []string{"queue", "kind", "state"},
		"{queue=default,kind=test.job,state=pending} 1")
	if n, _ := valueOf(t, reg, "leasehold_handler_duration_seconds", job); n != 2 {
		t.Errorf("handler durations = %v, want 2 (the refused attempt ran too)", n)
	}
	checkLabels(t, reg)
}

// TestRegistration: metrics register once per registry, until closed;
// they serve one client.
func TestRegistration(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := leaseholdprom.New(leaseholdprom.Options{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leaseholdprom.New(leaseholdprom.Options{Registerer: reg}); err == nil {
		t.Fatal("a second New on the same registry succeeded")
	}
	c, err := leasehold.NewClient(leasehold.Config{Driver: sqlitetest.Open(t)})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Attach(c); err != nil {
		t.Fatal(err)
	}
	if err := m.Attach(c); !errors.Is(err, leaseholdprom.ErrAttached) {
		t.Errorf("second Attach = %v, want ErrAttached", err)
	}
	m.Close()
	m.Close()
	if err := m.Attach(c); !errors.Is(err, leaseholdprom.ErrAttached) {
		t.Errorf("Attach after Close = %v, want ErrAttached", err)
	}
	if mfs, err := reg.Gather(); err != nil || len(mfs) != 0 {
		t.Errorf("registry after Close holds %d families (%v), want none", len(mfs), err)
	}
	m2, err := leaseholdprom.New(leaseholdprom.Options{Registerer: reg, Namespace: "jobs"})
	if err != nil {
		t.Fatalf("New after Close: %v", err)
	}
	defer m2.Close()
	if mfs, err := reg.Gather(); err != nil || len(mfs) == 0 || mfs[0].GetName()[:5] != "jobs_" {
		t.Errorf("families with namespace jobs: %v, %v", mfs, err)
	}
}

// checkSeries compares the series of name, labels in the given order,
// with want.
func checkSeries(t *testing.T, g prometheus.Gatherer, name string, labels []string, want string) {
	t.Helper()
	if got := series(gather(t, g, name), labels...); got != want {
		t.Errorf("%s:\n%s\nwant:\n%s", name, got, want)
	}
}

// checkLabels fails t if a gathered series has a label other than queue,
// kind, outcome and state: never a job id, an owner or an error.
func checkLabels(t *testing.T, g prometheus.Gatherer) {
	t.Helper()
	mfs, err := g.Gather()
	if err != nil {
		t.Fatal(err)
	}
	allowed := []string{"queue", "kind", "outcome", "state"}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if !slices.Contains(allowed, l.GetName()) {
					t.Errorf("%s has label %s=%q", mf.GetName(), l.GetName(), l.GetValue())
				}
			}
		}
	}
}

func total(samples []sample) float64 {
	var n float64
	for _, s := range samples {
		n += s.value
	}
	return n
}
