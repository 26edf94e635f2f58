package drivertest

import (
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// CheckPurgeQueuesAfterUpgrade checks a driver just migrated from a schema
// before the index of finished jobs by queue (migration 016), holding two
// jobs of kind "k" completed an hour ago, one in queue "a" and one in
// queue "b": a purge of queue a's finished jobs deletes a's job and keeps
// b's, which a purge of every queue then deletes. A driver's schema
// upgrade tests call it.
func CheckPurgeQueuesAfterUpgrade(t testing.TB, d driver.Driver) {
	t.Helper()
	ctx := t.Context()
	queues := func() []string {
		t.Helper()
		jobs, err := d.ListJobs(ctx, &leasehold.ListParams{ByFinish: true})
		if err != nil {
			t.Fatalf("ListJobs after the upgrade: %v", err)
		}
		var qs []string
		for _, j := range jobs {
			qs = append(qs, j.Queue)
		}
		return qs
	}
	if qs := queues(); len(qs) != 2 {
		t.Fatalf("finished jobs from before the upgrade in queues %v, want a and b", qs)
	}
	for _, step := range []struct {
		queues []string
		left   int
	}{{[]string{"a"}, 1}, {nil, 0}} {
		n, err := d.Purge(ctx, &driver.PurgeParams{OlderThan: time.Minute, Queues: step.queues})
		if err != nil || n != 1 {
			t.Fatalf("Purge(Queues %q) after the upgrade = %d, %v; want 1 job", step.queues, n, err)
		}
		if qs := queues(); len(qs) != step.left || step.left == 1 && qs[0] != "b" {
			t.Fatalf("finished jobs left after Purge(Queues %q) in queues %v, want %d (of queue b)", step.queues, qs, step.left)
		}
	}
}
