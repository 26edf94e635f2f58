package drivertest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/leasehold/leasehold"
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
	buckets, err := reader.Throughput(e.ctx, time.Hour)
	if err != nil {
		e.Fatalf("Throughput: %v", err)
	}
	got := map[string]int64{}
	for _, b := range buckets {
		got[fmt.Sprintf("%s/%s", b.Queue, b.Outcome)] += b.Jobs
	}
	want := map[string]int64{"default/completed": 4, "default/failed": 2}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		e.Errorf("recorded throughput = %v, want %v", got, want)
	}
	if _, err := reader.Throughput(e.ctx, 0); !errors.Is(err, leasehold.ErrInvalidArgs) {
		e.Errorf("Throughput(0) = %v, want ErrInvalidArgs", err)
	}
}
