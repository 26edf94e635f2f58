package sqlitedriver

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/statemachine"
)

// BenchmarkDrain measures claiming and finishing no-op jobs in batches of
// 100 with two claimers, as a client does: b.N jobs, reported as jobs/s.
// In "completed" every job completes; in "retried-1pc" one job in a
// hundred is retried an hour later with an error of its own, as a
// declined payment is, so that nearly every batch holds more than one
// transition.
func BenchmarkDrain(b *testing.B) {
	b.Run("completed", func(b *testing.B) { benchDrain(b, 0) })
	b.Run("retried-1pc", func(b *testing.B) { benchDrain(b, 100) })
}

// benchDrain drains b.N jobs, retrying every retryEvery-th job claimed
// (none when 0).
func benchDrain(b *testing.B, retryEvery int) {
	d := openTest(b)
	insertN(b, d, b.N)
	ctx := context.Background()
	b.ResetTimer()
	start := time.Now()
	var wg sync.WaitGroup
	for w := 0; w < 2; w++ {
		owner := []string{"a", "b"}[w]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				js, err := d.Claim(ctx, &driver.ClaimParams{Queue: "q", Kinds: []string{"k"},
					Owner: owner, TTL: time.Minute, Limit: 100})
				if err != nil {
					b.Error(err)
					return
				}
				if len(js) == 0 {
					return
				}
				if _, err := d.Finish(ctx, nil, benchEndings(js, owner, retryEvery)); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "jobs/s")
}

// benchEndings completes the leases of js, but retries those whose id is
// a multiple of retryEvery (when it is not 0) an hour later, each with
// its own error.
func benchEndings(js []*leasehold.JobRow, owner string, retryEvery int) []*driver.FinishParams {
	ps := make([]*driver.FinishParams, len(js))
	for i, j := range js {
		t := transition(leasehold.OutcomeCompleted, "")
		if retryEvery > 0 && j.ID%int64(retryEvery) == 0 {
			t = statemachine.Finish(statemachine.Ending{Outcome: leasehold.OutcomeRetried,
				Delay: time.Hour, Error: fmt.Sprintf("card declined (job %d)", j.ID)})
		}
		ps[i] = &driver.FinishParams{ID: j.ID, Owner: owner, Attempt: j.Attempt, Transition: t}
	}
	return ps
}

// BenchmarkFinish measures Finish alone, in batches of 1,000 leases
// claimed (untimed) just before, and reports the time of a lease's
// finish: every lease completed; one in a hundred retried with an error
// of its own (see BenchmarkDrain); and every lease retried, the batch in
// groups of 1, 2, 4 or 8 leases that share their error (one transition
// each), which the driver writes as a uniform batch each from minGroup
// on.
func BenchmarkFinish(b *testing.B) {
	b.Run("completed", func(b *testing.B) {
		benchFinish(b, func(js []*leasehold.JobRow) []*driver.FinishParams { return benchEndings(js, "a", 0) })
	})
	b.Run("retried-1pc", func(b *testing.B) {
		benchFinish(b, func(js []*leasehold.JobRow) []*driver.FinishParams { return benchEndings(js, "a", 100) })
	})
	for _, per := range []int{1, 2, 4, 8} {
		b.Run(fmt.Sprintf("groups-of-%d", per), func(b *testing.B) {
			benchFinish(b, func(js []*leasehold.JobRow) []*driver.FinishParams { return groupedEndings(js, per) })
		})
	}
}

// groupedEndings retries every lease of js (owner "a") an hour later,
// with one error text per per leases.
func groupedEndings(js []*leasehold.JobRow, per int) []*driver.FinishParams {
	ps := make([]*driver.FinishParams, len(js))
	for i, j := range js {
		t := statemachine.Finish(statemachine.Ending{Outcome: leasehold.OutcomeRetried,
			Delay: time.Hour, Error: fmt.Sprintf("declined (group %d)", i/per)})
		ps[i] = &driver.FinishParams{ID: j.ID, Owner: "a", Attempt: j.Attempt, Transition: t}
	}
	return ps
}

// benchFinish finishes b.N leases of owner "a" in batches of 1,000, as
// endings says.
func benchFinish(b *testing.B, endings func([]*leasehold.JobRow) []*driver.FinishParams) {
	const batch = 1000
	d := openTest(b)
	insertN(b, d, b.N)
	ctx := context.Background()
	b.ResetTimer()
	var took time.Duration
	for left := b.N; left > 0; left -= batch {
		js, err := d.Claim(ctx, &driver.ClaimParams{Queue: "q", Kinds: []string{"k"},
			Owner: "a", TTL: time.Hour, Limit: min(batch, left)})
		if err != nil || len(js) == 0 {
			b.Fatalf("claim: %d jobs, %v", len(js), err)
		}
		ps := endings(js)
		start := time.Now()
		if _, err := d.Finish(ctx, nil, ps); err != nil {
			b.Fatal(err)
		}
		took += time.Since(start)
	}
	b.ReportMetric(float64(took.Nanoseconds())/float64(b.N)/1e3, "µs/lease")
}

// BenchmarkInsertBulk measures InsertBulk of 1000 jobs per call.
func BenchmarkInsertBulk(b *testing.B) {
	d := openTest(b)
	ps := make([]*driver.InsertParams, 1000)
	for i := range ps {
		ps[i] = job(`{"amount":1234,"currency":"EUR"}`)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := d.InsertBulk(context.Background(), ps); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N*len(ps))/b.Elapsed().Seconds(), "jobs/s")
}
