package leasehold_test

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// TestSlowClaimPastGraceNotEnqueued checks, on both drivers, that a
// slot whose claim is delayed past its Grace (here an insert middleware
// whose first call takes 3 s, against a 1 s grace) is not enqueued with
// CatchUpNone: it is missed, logged as such, and the schedule goes on
// with later slots, each of whose jobs was written within its grace.
func TestSlowClaimPastGraceNotEnqueued(t *testing.T) {
	eachDriver(t, func(t *testing.T, d driver.Driver) {
		t.Parallel()
		const grace = time.Second
		var (
			mu      sync.Mutex
			calls   int
			slowKey string
		)
		slow := leasehold.InsertMiddlewareFunc(func(ctx context.Context, _ any, jobs []*leasehold.InsertJob,
			next func(context.Context) ([]*leasehold.InsertResult, error)) ([]*leasehold.InsertResult, error) {
			mu.Lock()
			calls++
			first := calls == 1
			if first {
				slowKey = jobs[0].Opts.UniqueKey
			}
			mu.Unlock()
			if first {
				time.Sleep(3 * grace) // a lookup that took 3 s, within the 30 s try
			}
			return next(ctx)
		})
		var logs lockedLog
		c := startedWithPeriodic(t, leasehold.Config{Driver: d, Logger: logs.Logger(),
			InsertMiddleware: []leasehold.InsertMiddleware{slow}},
			leasehold.PeriodicJob{Name: "tick", Schedule: leasehold.Every(2 * time.Second), Args: tick,
				Grace: grace, CatchUp: leasehold.CatchUpNone})
		jobs := waitForJobs(t, c, "tick", 30*time.Second)
		mu.Lock()
		key := slowKey
		mu.Unlock()
		for _, j := range jobs {
			if j.UniqueKey == key {
				t.Errorf("job %d enqueued for the slot claimed 3 s after it, past its 1 s Grace (%s)", j.ID, key)
			}
			slot, err := time.Parse(time.RFC3339Nano, strings.TrimPrefix(j.UniqueKey, "periodic:tick:"))
			if err != nil {
				t.Fatalf("job %d: unique key %q: %v", j.ID, j.UniqueKey, err)
			}
			if late := j.CreatedAt.Sub(slot); late > grace {
				t.Errorf("job %d of slot %v written %v after it, past its Grace %v", j.ID, slot, late, grace)
			}
		}
		if !strings.Contains(logs.String(), "periodic slots missed") {
			t.Errorf("the slot refused as late was not reported missed; log:\n%s", logs.String())
		}
	})
}

// waitForJobs waits up to limit for jobs of kind to exist, and returns
// them.
func waitForJobs(t *testing.T, c *leasehold.Client, kind string, limit time.Duration) []*leasehold.JobRow {
	t.Helper()
	for end := time.Now().Add(limit); ; time.Sleep(100 * time.Millisecond) {
		jobs, err := c.Driver().ListJobs(t.Context(), &leasehold.ListParams{Kind: kind})
		if err != nil {
			t.Fatal(err)
		}
		if len(jobs) > 0 {
			return jobs
		}
		if time.Now().After(end) {
			t.Fatalf("no %s job within %v", kind, limit)
		}
	}
}
