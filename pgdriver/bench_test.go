package pgdriver

import (
	"fmt"
	"testing"
	"time"

	leasehold "github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/statemachine"
	"github.com/leasehold/leasehold/internal/testdb"
)

// openBench opens a migrated driver on a fresh schema for a benchmark.
func openBench(b *testing.B) *Driver {
	b.Helper()
	ctx := b.Context()
	d, err := Open(ctx, testdb.PostgresURL(b))
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = d.Close() })
	if _, err := d.Migrate(ctx); err != nil {
		b.Fatal(err)
	}
	return d
}

// openBenchWith is openBench with n pending jobs of kind k in queue
// "bench".
func openBenchWith(b *testing.B, n int) *Driver {
	b.Helper()
	d := openBench(b)
	ps := make([]*driver.InsertParams, n)
	for i := range ps {
		ps[i] = job("bench")
	}
	if _, err := d.InsertBulk(b.Context(), ps); err != nil {
		b.Fatal(err)
	}
	return d
}

// BenchmarkInsertBulk measures COPY insertion; b.N is the number of jobs.
func BenchmarkInsertBulk(b *testing.B) {
	d := openBench(b)
	ps := make([]*driver.InsertParams, b.N)
	for i := range ps {
		ps[i] = job("bench")
	}
	b.ResetTimer()
	if n, err := d.InsertBulk(b.Context(), ps); err != nil || n != int64(b.N) {
		b.Fatalf("InsertBulk = %d, %v", n, err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}

// BenchmarkClaimFinish drains jobs in batches of 100: one Claim and one
// Finish statement per batch; b.N is the number of jobs.
func BenchmarkClaimFinish(b *testing.B) {
	d := openBenchWith(b, b.N)
	ctx := b.Context()
	b.ResetTimer()
	claim := &driver.ClaimParams{Queue: "bench", Kinds: []string{"k"}, Owner: "w", TTL: leaseTTL, Limit: 100, TakeOver: true}
	for done := 0; done < b.N; {
		jobs, err := d.Claim(ctx, claim)
		if err != nil {
			b.Fatal(err)
		}
		fs := make([]*driver.FinishParams, len(jobs))
		for i, j := range jobs {
			fs[i] = &driver.FinishParams{ID: j.ID, Owner: "w", Attempt: j.Attempt, Transition: transition(leasehold.OutcomeCompleted, "")}
		}
		ids, err := d.Finish(ctx, nil, fs)
		if err != nil || len(ids) != len(jobs) {
			b.Fatalf("Finish = %d of %d, %v", len(ids), len(jobs), err)
		}
		done += len(jobs)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
}

// BenchmarkFinish measures Finish alone, in batches of 1,000 leases
// claimed (untimed) just before, and reports the time of a lease's
// finish: every lease completed, or one in a hundred or one in ten
// retried an hour later with an error of its own, as a declined payment
// is (one transition each).
func BenchmarkFinish(b *testing.B) {
	for _, every := range []int{0, 100, 10} {
		name := "completed"
		if every > 0 {
			name = fmt.Sprintf("retried-1-in-%d", every)
		}
		b.Run(name, func(b *testing.B) { benchFinish(b, every) })
	}
}

// benchFinish finishes b.N leases in batches of 1,000, retrying those
// whose id is a multiple of retryEvery (none when 0).
func benchFinish(b *testing.B, retryEvery int) {
	const batch = 1000
	d := openBenchWith(b, b.N)
	ctx := b.Context()
	b.ResetTimer()
	var took time.Duration
	for left := b.N; left > 0; left -= batch {
		jobs, err := d.Claim(ctx, &driver.ClaimParams{Queue: "bench", Kinds: []string{"k"}, Owner: "w",
			TTL: time.Hour, Limit: min(batch, left)})
		if err != nil || len(jobs) == 0 {
			b.Fatalf("claim: %d jobs, %v", len(jobs), err)
		}
		fs := make([]*driver.FinishParams, len(jobs))
		for i, j := range jobs {
			t := transition(leasehold.OutcomeCompleted, "")
			if retryEvery > 0 && j.ID%int64(retryEvery) == 0 {
				t = statemachine.Finish(statemachine.Ending{Outcome: leasehold.OutcomeRetried,
					Delay: time.Hour, Error: fmt.Sprintf("card declined (job %d)", j.ID)})
			}
			fs[i] = &driver.FinishParams{ID: j.ID, Owner: "w", Attempt: j.Attempt, Transition: t}
		}
		start := time.Now()
		if ids, err := d.Finish(ctx, nil, fs); err != nil || len(ids) != len(fs) {
			b.Fatalf("Finish = %d of %d, %v", len(ids), len(fs), err)
		}
		took += time.Since(start)
	}
	b.ReportMetric(float64(took.Nanoseconds())/float64(b.N)/1e3, "µs/lease")
}
