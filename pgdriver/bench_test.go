package pgdriver

import (
	"testing"

	leasehold "github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
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
	d := openBench(b)
	ctx := b.Context()
	ps := make([]*driver.InsertParams, b.N)
	for i := range ps {
		ps[i] = job("bench")
	}
	if _, err := d.InsertBulk(ctx, ps); err != nil {
		b.Fatal(err)
	}
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
