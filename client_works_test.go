package leasehold_test

import (
	"context"
	"testing"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/sqlitedriver/sqlitetest"
)

type worksArgs struct{}

func (worksArgs) Kind() string { return "works" }

// TestClientWorks: a client works its queues when it has workers, added
// before NewClient or after it (before Start); a client without any, or
// with an empty Workers, works none, though Queues names "default".
func TestClientWorks(t *testing.T) {
	drv := sqlitetest.Open(t)
	noop := leasehold.WorkFunc[worksArgs](func(context.Context, *leasehold.Job[worksArgs]) error { return nil })
	client := func(ws *leasehold.Workers) *leasehold.Client {
		c, err := leasehold.NewClient(leasehold.Config{Driver: drv, Workers: ws})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if c := client(nil); c.Works() || len(c.Queues()) != 1 {
		t.Errorf("no workers: Works %v, Queues %v; want false and [default]", c.Works(), c.Queues())
	}
	empty := leasehold.NewWorkers()
	late := client(empty)
	if late.Works() {
		t.Error("empty workers: Works true, want false")
	}
	if err := leasehold.AddWorker(empty, noop); err != nil {
		t.Fatal(err)
	}
	if !late.Works() {
		t.Error("a worker added after NewClient: Works false, want true")
	}
	ws := leasehold.NewWorkers()
	if err := leasehold.AddWorker(ws, noop); err != nil {
		t.Fatal(err)
	}
	if !client(ws).Works() {
		t.Error("with a worker: Works false, want true")
	}
}
