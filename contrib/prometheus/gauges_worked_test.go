package leaseholdprom_test

import (
	"testing"

	"github.com/leasehold/leasehold"
	leaseholdprom "github.com/leasehold/leasehold/contrib/prometheus"
	"github.com/leasehold/leasehold/sqlitedriver/sqlitetest"
)

// TestQueueGaugesOnlyWorkedQueuesPadded: a client without workers (an
// insert-only application, leasehold serve's) works no queue, though
// its config names "default": its queue gauges show the queues that have
// unfinished jobs, and no series for "default" unless jobs are there. A
// client with workers shows each queue it works, at 0 while empty.
func TestQueueGaugesOnlyWorkedQueuesPadded(t *testing.T) {
	const oldestDue = "leasehold_queue_oldest_due_seconds"
	insert := func(t *testing.T, c *leasehold.Client, queue string) {
		t.Helper()
		if _, err := c.Insert(t.Context(), testArgs{}, &leasehold.InsertOpts{Queue: queue}); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("no workers, no jobs", func(t *testing.T) {
		_, reg, _ := metricsClient(t, leasehold.Config{Driver: sqlitetest.Open(t)}, leaseholdprom.Options{})
		checkSeries(t, reg, "leasehold_queue_jobs", []string{"queue", "state"}, "")
		checkSeries(t, reg, oldestDue, []string{"queue"}, "")
	})
	t.Run("no workers, a job in another queue", func(t *testing.T) {
		c, reg, _ := metricsClient(t, leasehold.Config{Driver: sqlitetest.Open(t)}, leaseholdprom.Options{})
		insert(t, c, "mail")
		checkSeries(t, reg, "leasehold_queue_jobs", []string{"queue", "state"}, `{queue=mail,state=pending} 1
{queue=mail,state=processing} 0
{queue=mail,state=reconciling} 0
{queue=mail,state=stuck} 0`)
	})
	t.Run("no workers, a job in default", func(t *testing.T) {
		c, reg, _ := metricsClient(t, leasehold.Config{Driver: sqlitetest.Open(t)}, leaseholdprom.Options{})
		insert(t, c, "")
		if v, ok := valueOf(t, reg, "leasehold_queue_jobs", map[string]string{"queue": "default", "state": "pending"}); !ok || v != 1 {
			t.Errorf("pending of default with a job = %v (present %v), want 1", v, ok)
		}
	})
	t.Run("workers on default", func(t *testing.T) {
		ws := leasehold.NewWorkers()
		if err := leasehold.AddWorker(ws, handler(nil)); err != nil {
			t.Fatal(err)
		}
		c, reg, _ := metricsClient(t, leasehold.Config{Driver: sqlitetest.Open(t), Workers: ws}, leaseholdprom.Options{})
		if err := c.Start(t.Context()); err != nil {
			t.Fatal(err)
		}
		checkSeries(t, reg, oldestDue, []string{"queue"}, `{queue=default} 0`)
		checkSeries(t, reg, "leasehold_queue_jobs", []string{"queue", "state"}, `{queue=default,state=pending} 0
{queue=default,state=processing} 0
{queue=default,state=reconciling} 0
{queue=default,state=stuck} 0`)
	})
}
