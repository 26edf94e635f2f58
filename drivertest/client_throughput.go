package drivertest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// testThroughputRecorded: the attempts a client ends are added to the
// database's per-minute totals by queue and outcome, at the latest when
// the client stops, and another client reads them through Throughput.
func testThroughputRecorded(e *clientEnv) {
	c := e.newClient(e.d, e.workers(func(_ context.Context, job *leasehold.Job[testArgs]) error {
		if job.Args.N == 0 {
			return leasehold.Permanent(errors.New("refused"))
		}
		return nil
	}), nil)
	var last int64
	for i := range 6 {
		res, err := c.Insert(e.ctx, testArgs{N: i % 3}, &leasehold.InsertOpts{Queue: leasehold.DefaultQueue})
		if err != nil {
			e.Fatalf("Insert: %v", err)
		}
		last = res.Job.ID
	}
	e.waitFor("every job to finish", 30*time.Second, func() bool {
		row, err := e.d.GetJob(e.ctx, last)
		return err == nil && row.State.Finished()
	})
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	if err := c.Stop(ctx); err != nil {
		e.Fatalf("Stop: %v", err)
	}
	reader := e.newClient(e.h.OpenSecond(e.T, e.d), nil, nil)
	got := e.throughputTotals(reader)
	want := map[string]int64{"default/completed": 4, "default/failed": 2}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		e.Errorf("recorded throughput = %v, want %v", got, want)
	}
	if _, err := reader.Throughput(e.ctx, 0); !errors.Is(err, leasehold.ErrInvalidArgs) {
		e.Errorf("Throughput(0) = %v, want ErrInvalidArgs", err)
	}
}

// testThroughputRescuedByIdleClient: expired leases moved by the
// RescueExpired of a client that never started (as `leasehold watch
// --once` and the dashboard's watcher button call it) count in the
// per-minute totals as expired leases, though no recorder of that
// client runs to write them.
func testThroughputRescuedByIdleClient(e *clientEnv) {
	c, err := leasehold.NewClient(leasehold.Config{Driver: e.d, Logger: quietLogger()}) // never started
	if err != nil {
		e.Fatalf("NewClient: %v", err)
	}
	ids := []int64{e.insertOpts(c, &leasehold.InsertOpts{Queue: "rescued", MaxAttempts: 3}),
		e.insertOpts(c, &leasehold.InsertOpts{Queue: "rescued", MaxAttempts: 3})}
	for _, id := range ids {
		if _, err := e.d.ClaimByID(e.ctx, &driver.ClaimByIDParams{ID: id, Owner: "dead-worker", TTL: 100 * time.Millisecond}); err != nil {
			e.Fatalf("ClaimByID: %v", err)
		}
	}
	var moved int
	e.waitFor("RescueExpired to move both jobs", 10*time.Second, func() bool {
		m, err := c.RescueExpired(e.ctx)
		if err != nil {
			e.Fatalf("RescueExpired: %v", err)
		}
		moved += len(m)
		return moved == 2
	})
	got := e.throughputTotals(c)
	if want := map[string]int64{"rescued/lease_expired": 2}; fmt.Sprint(got) != fmt.Sprint(want) {
		e.Errorf("throughput after an unstarted client's RescueExpired = %v, want %v", got, want)
	}
}

// throughputTotals returns c's per-minute totals of the last hour summed
// by "queue/outcome".
func (e *clientEnv) throughputTotals(c *leasehold.Client) map[string]int64 {
	e.Helper()
	buckets, err := c.Throughput(e.ctx, time.Hour)
	if err != nil {
		e.Fatalf("Throughput: %v", err)
	}
	got := map[string]int64{}
	for _, b := range buckets {
		got[fmt.Sprintf("%s/%s", b.Queue, b.Outcome)] += b.Jobs
	}
	return got
}
