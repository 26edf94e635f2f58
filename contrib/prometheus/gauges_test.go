package leaseholdprom_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/leasehold/leasehold"
	leaseholdprom "github.com/leasehold/leasehold/contrib/prometheus"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/sqlitedriver/sqlitetest"
)

// countingDriver counts ActiveQueueStats calls, and fails them on demand.
type countingDriver struct {
	driver.Driver
	calls atomic.Int64
	fail  atomic.Bool
}

var errUnreachable = errors.New("database unreachable")

func (d *countingDriver) ActiveQueueStats(ctx context.Context, p *driver.ActiveStatsParams) ([]*leasehold.QueueStats, error) {
	d.calls.Add(1)
	if d.fail.Load() {
		return nil, errUnreachable
	}
	return d.Driver.ActiveQueueStats(ctx, p)
}

// TestQueueGauges: the queue gauges come from the database, at most once
// per interval however often and however concurrently the registry is
// scraped; a queue emptied of unfinished jobs stays at 0; a failed
// reading shows no stale figures.
func TestQueueGauges(t *testing.T) {
	ctx := t.Context()
	const interval = 500 * time.Millisecond
	drv := &countingDriver{Driver: sqlitetest.Open(t)}
	c, reg, _ := metricsClient(t, leasehold.Config{Driver: drv}, leaseholdprom.Options{QueueStatsInterval: interval})
	hourAgo := &leasehold.InsertOpts{RunAt: time.Now().Add(-time.Hour)}
	for _, opts := range []*leasehold.InsertOpts{hourAgo, nil, {Queue: "other"}} {
		if _, err := c.Insert(ctx, testArgs{Do: "complete"}, opts); err != nil {
			t.Fatal(err)
		}
	}
	read := time.Now() // the reading starts after this: the cache is fresh until read+interval at least
	checkSeries(t, reg, "leasehold_queue_jobs", []string{"queue", "state"}, `{queue=default,state=pending} 2
{queue=default,state=processing} 0
{queue=default,state=reconciling} 0
{queue=default,state=stuck} 0
{queue=other,state=pending} 1
{queue=other,state=processing} 0
{queue=other,state=reconciling} 0
{queue=other,state=stuck} 0`)
	readDone := time.Now() // and it started before this: stale after readDone+interval
	due := gather(t, reg, "leasehold_queue_oldest_due_seconds")
	if len(due) != 2 {
		t.Fatalf("oldest due series: %+v", due)
	}
	for _, s := range due {
		if s.labels["queue"] == "default" && (s.value < 3590 || s.value > 3700) ||
			s.labels["queue"] == "other" && s.value > 60 {
			t.Errorf("oldest due %v = %v s; want about an hour for default, seconds for other", s.labels, s.value)
		}
	}
	if _, err := c.Insert(ctx, testArgs{Do: "complete"}, nil); err != nil {
		t.Fatal(err)
	}
	scrapeConcurrently(t, reg, 8)
	if time.Since(read) < interval {
		if n := drv.calls.Load(); n != 1 {
			t.Errorf("%d QueueStats calls within the interval, want 1", n)
		}
		if v, _ := valueOf(t, reg, "leasehold_queue_jobs", map[string]string{"queue": "default", "state": "pending"}); v != 2 {
			t.Errorf("pending within the interval = %v, want the cached 2", v)
		}
	}
	time.Sleep(time.Until(readDone.Add(interval)))
	before := drv.calls.Load()
	scrapeConcurrently(t, reg, 8)
	if n := drv.calls.Load() - before; n != 1 {
		t.Errorf("%d QueueStats calls for 8 concurrent scrapes after the interval, want 1", n)
	}
	if v, _ := valueOf(t, reg, "leasehold_queue_jobs", map[string]string{"queue": "default", "state": "pending"}); v != 3 {
		t.Errorf("pending after the interval = %v, want 3", v)
	}

	// A queue whose last unfinished job is gone keeps its series, at 0.
	other, err := c.ListJobs(ctx, &leasehold.ListParams{Queue: "other"})
	if err != nil || len(other) != 1 {
		t.Fatalf("jobs of queue other: %d, %v", len(other), err)
	}
	if _, err := c.CancelJob(ctx, other[0].ID); err != nil {
		t.Fatal(err)
	}
	time.Sleep(interval)
	if v, ok := valueOf(t, reg, "leasehold_queue_jobs", map[string]string{"queue": "other", "state": "pending"}); !ok || v != 0 {
		t.Errorf("pending of a queue with no unfinished job left = %v (present %v), want 0", v, ok)
	}

	drv.fail.Store(true)
	time.Sleep(interval)
	if got := gather(t, reg, "leasehold_queue_jobs"); len(got) != 0 {
		t.Errorf("queue gauges after a failed reading: %+v, want none", got)
	}
	if v, _ := valueOf(t, reg, "leasehold_queue_stats_failures_total", map[string]string{}); v != 1 {
		t.Errorf("queue stats failures = %v, want 1", v)
	}
	if _, ok := valueOf(t, reg, "leasehold_jobs_running", map[string]string{}); !ok {
		t.Error("leasehold_jobs_running missing while the database fails")
	}
}

// TestQueueGaugesConfiguredQueues: every queue a client with workers is
// configured to work has its series at 0 from the first reading, before
// it ever had a job, as an empty queue that was seen once keeps them.
func TestQueueGaugesConfiguredQueues(t *testing.T) {
	ws := leasehold.NewWorkers()
	if err := leasehold.AddWorker(ws, handler(nil)); err != nil {
		t.Fatal(err)
	}
	cfg := leasehold.Config{Driver: sqlitetest.Open(t), Workers: ws, Queues: map[string]leasehold.QueueConfig{"idle": {}, "mail": {}}}
	_, reg, _ := metricsClient(t, cfg, leaseholdprom.Options{})
	checkSeries(t, reg, "leasehold_queue_jobs", []string{"queue", "state"}, `{queue=idle,state=pending} 0
{queue=idle,state=processing} 0
{queue=idle,state=reconciling} 0
{queue=idle,state=stuck} 0
{queue=mail,state=pending} 0
{queue=mail,state=processing} 0
{queue=mail,state=reconciling} 0
{queue=mail,state=stuck} 0`)
	checkSeries(t, reg, "leasehold_queue_oldest_due_seconds", []string{"queue"}, `{queue=idle} 0
{queue=mail} 0`)
}

// TestQueueGaugesOff: a negative interval reads nothing.
func TestQueueGaugesOff(t *testing.T) {
	drv := &countingDriver{Driver: sqlitetest.Open(t)}
	_, reg, _ := metricsClient(t, leasehold.Config{Driver: drv}, leaseholdprom.Options{QueueStatsInterval: -1})
	scrapeConcurrently(t, reg, 2)
	if n := drv.calls.Load(); n != 0 {
		t.Errorf("%d QueueStats calls with the gauges off", n)
	}
	if got := gather(t, reg, "leasehold_queue_jobs"); len(got) != 0 {
		t.Errorf("queue gauges with the gauges off: %+v", got)
	}
}

// scrapeConcurrently gathers the registry n times at once.
func scrapeConcurrently(t *testing.T, reg prometheus.Gatherer, n int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			if _, err := reg.Gather(); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
