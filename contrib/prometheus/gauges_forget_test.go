package leaseholdprom

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/sqlitedriver/sqlitetest"
)

// TestQueueSeriesForgotten: jobs in queues named from input (one per
// tenant), then gone from the database. Each such queue keeps its gauge
// series at 0 for forgetAfter readings, then loses them, so that they
// do not grow for the life of the process; a queue the client works
// keeps its series for good, and a forgotten queue that has jobs again
// shows again.
func TestQueueSeriesForgotten(t *testing.T) {
	ctx := t.Context()
	drv := sqlitetest.Open(t)
	ws := leasehold.NewWorkers()
	if err := leasehold.AddWorker(ws, leasehold.WorkFunc[mailArgs](func(context.Context, *leasehold.Job[mailArgs]) error { return nil })); err != nil {
		t.Fatal(err)
	}
	c, err := leasehold.NewClient(leasehold.Config{Driver: drv, Workers: ws, Queues: map[string]leasehold.QueueConfig{"mail": {}}})
	if err != nil {
		t.Fatal(err)
	}
	const tenants = 20
	var ps []*driver.InsertParams
	for i := range tenants {
		ps = append(ps, &driver.InsertParams{Kind: "test.job", Queue: fmt.Sprintf("tenant-%d", i), Args: []byte(`{}`), MaxAttempts: 1})
	}
	if _, err := drv.Insert(ctx, nil, ps); err != nil {
		t.Fatal(err)
	}
	q := newClientCollector("leasehold", time.Nanosecond) // every collection reads
	q.attach(c)
	queues := func() int { return testutil.CollectAndCount(q, "leasehold_queue_oldest_due_seconds") }
	if n := queues(); n != tenants+1 {
		t.Fatalf("%d queues shown with jobs, want %d", n, tenants+1)
	}
	if _, err := drv.DB().ExecContext(ctx, `DELETE FROM leasehold_jobs`); err != nil {
		t.Fatal(err)
	}
	for i := range forgetAfter {
		if n := queues(); n != tenants+1 {
			t.Fatalf("reading %d without jobs: %d queues shown, want %d at 0", i+1, n, tenants+1)
		}
	}
	if n := queues(); n != 1 {
		t.Errorf("reading %d without jobs: %d queues shown, want the worked one only", forgetAfter+1, n)
	}
	if _, err := drv.Insert(ctx, nil, ps[:1]); err != nil {
		t.Fatal(err)
	}
	if n := queues(); n != 2 {
		t.Errorf("a forgotten queue with a job again: %d queues shown, want 2", n)
	}
}

// mailArgs are the jobs of the client's one worker.
type mailArgs struct{}

// Kind implements leasehold.Args.
func (mailArgs) Kind() string { return "test.mail" }
