package sqlitedriver

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// BenchmarkDrain measures claiming and completing no-op jobs in batches of
// 100 with two claimers, as a client does: b.N jobs, reported as jobs/s.
func BenchmarkDrain(b *testing.B) {
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
				ps := make([]*driver.FinishParams, len(js))
				for i, j := range js {
					ps[i] = &driver.FinishParams{ID: j.ID, Owner: owner, Attempt: j.Attempt,
						Transition: transition(leasehold.OutcomeCompleted, "")}
				}
				if _, err := d.Finish(ctx, nil, ps); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "jobs/s")
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
