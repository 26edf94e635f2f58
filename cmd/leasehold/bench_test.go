package main

import (
	"encoding/json"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/bench"
	"github.com/leasehold/leasehold/internal/testdb"
)

// tinyBench are bench flags small enough for a smoke test: every phase
// runs, and the drains with metrics, on a handful of jobs. The figures
// are not checked, only that each phase produced them.
var tinyBench = []string{"bench", "--jobs", "200", "--workers", "2,20", "--metrics", "--tracing", "--metrics-rounds", "1",
	"--ceiling-batch", "50", "--ceiling-rounds", "2", "--rate", "200", "--latency-for", "200ms", "--lease-jobs", "20", "--lease-ttl", "600ms",
	"--lease-hold", "2s", "--idle-queues", "50", "--idle-for", "1s", "--idle-rate", "20", "--idle-pickup-for", "200ms",
	"--timeout", "60s"}

// TestBenchSmoke runs `leasehold bench` end to end on tiny numbers so that
// it cannot rot: on SQLite with the table, and on PostgreSQL with --json,
// the JSON file and the chart.
func TestBenchSmoke(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		t.Parallel()
		dir := t.TempDir()
		r := runIn(t, dir, nil, append([]string{"--db", "sqlite:" + filepath.Join(dir, "b.db")}, tinyBench...)...)
		if r.code != 0 {
			t.Fatalf("bench: %s", r)
		}
		for _, want := range []string{"bulk insert", "bare SQL ceiling", "leasehold (default)", "default drain / ceiling by round", "leasehold (default) + metrics, median", "leasehold (default) + metrics + tracing 1% sampled, median", "leasehold (default) + metrics + tracing every span, median", "in-process wake", "lease overhead", "idle queues"} {
			if !strings.Contains(r.stdout, want) {
				t.Errorf("bench output lacks %q:\n%s", want, r.stdout)
			}
		}
		if left, _ := filepath.Glob(filepath.Join(dir, "leasehold-bench-*")); len(left) > 0 {
			t.Errorf("scratch files left behind: %v", left)
		}
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		db := testdb.PostgresURL(t)
		dir := t.TempDir()
		out, chart := filepath.Join(dir, "bench.json"), filepath.Join(dir, "bench.png")
		args := append([]string{"--db", db, "--json"}, tinyBench...)
		r := runIn(t, "", nil, append(args, "--out", out, "--chart", chart)...)
		if r.code != 0 {
			t.Fatalf("bench: %s", r)
		}
		var rep bench.Report
		if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
			t.Fatalf("bench --json: %v\n%s", err, r)
		}
		if rep.Database != "postgres" || rep.Insert == nil || len(rep.Drain) != 3 || rep.Ceiling == nil ||
			len(rep.Latency) != 2 || len(rep.Lease) != 3 || len(rep.Idle) != 2 || rep.DefaultRatio <= 0 {
			t.Errorf("bench report incomplete: %+v", rep)
		}
		if m := rep.DrainMetrics; m == nil || m.Ratio <= 0 || m.Scrapes < 1 || m.Workers != rep.Drain[2].Workers || m.BestRatio <= 0 ||
			len(m.Plain) != 1 || len(m.WithMetrics) != 1 {
			t.Errorf("drain with metrics: %+v", m)
		}
		if m := rep.DrainMetrics; m != nil {
			checkTraced(t, m)
		}
		for _, d := range rep.Drain {
			if d.JobsPerSec <= 0 || d.Statements <= 0 || d.Ceiling <= 0 || d.CeilingRatio <= 0 || d.BestRatio <= 0 {
				t.Errorf("drain %d workers: %+v", d.Workers, d)
			}
			// A completed job is updated at least twice (claim, completion)
			// and so is its attempt row once: each update leaves a dead
			// version, so fewer than 2 means the counters were read early.
			if d.Rows == nil || d.Rows.WALBytesPerJob <= 0 || d.Rows.DeadRowsPerJob < 2 || d.Rows.DeadRowsPerJob > 6 {
				t.Errorf("drain %d workers: row cost %+v, want WAL and 2 to 6 dead row versions per job", d.Workers, d.Rows)
			}
		}
		if c := rep.Ceiling; c != nil && (len(c.Samples) != len(rep.Drain)+2 || c.BestJobsPerSec < c.JobsPerSec) {
			t.Errorf("ceiling: want one sample before the first drain, one after each other drain and one per round, best >= median: %+v", c)
		}
		if d := rep.Drain[2]; len(d.Rounds) != 2 || d.Rounds[0].CeilingFirst || !d.Rounds[1].CeilingFirst ||
			rep.DefaultRatio != (d.Rounds[0].Ratio+d.Rounds[1].Ratio)/2 {
			t.Errorf("default drain: want 2 rounds against the ceiling, drain first then ceiling first, ratio their median: %+v", d)
		}
		if _, err := os.Stat(out); err != nil {
			t.Errorf("--out: %v", err)
		}
		if r := runIn(t, "", nil, "bench", "--from", out); r.code != 0 || !strings.Contains(r.stdout, "bare SQL ceiling") {
			t.Errorf("bench --from: %s", r)
		}
		f, err := os.Open(chart)
		if err != nil {
			t.Fatalf("--chart: %v", err)
		}
		defer f.Close()
		if _, err := png.Decode(f); err != nil {
			t.Errorf("--chart is not a PNG: %v", err)
		}
	})
}

// checkTraced checks the traced drains of a tiny bench: one sampled at the
// default ratio and one sampling every span, each of whose sampled jobs
// exported one span.
func checkTraced(t *testing.T, m *bench.MetricsDrain) {
	t.Helper()
	if len(m.Traced) != 2 || m.Traced[0].Sample != bench.DefaultTraceSample || m.Traced[1].Sample != 1 {
		t.Fatalf("traced drains: %+v", m.Traced)
	}
	for _, tr := range m.Traced {
		if tr.Ratio <= 0 || len(tr.Rates) != m.Rounds || tr.Spans != tr.SampledJobs || tr.CPU <= 0 {
			t.Errorf("traced drain: %+v", tr)
		}
	}
	if all := int64(m.Traced[1].Jobs * m.Rounds); m.Traced[1].SampledJobs != all || m.Traced[0].SampledJobs >= all {
		t.Errorf("sampled jobs: %d at %g, %d at 1, of %d", m.Traced[0].SampledJobs, m.Traced[0].Sample, m.Traced[1].SampledJobs, all)
	}
}

// TestBenchRetryEvery: with --retry-every N a drain's handler fails the
// jobs whose id is a multiple of N, the drain ends once every job is
// completed or retried, and the report says so.
func TestBenchRetryEvery(t *testing.T) {
	dir := t.TempDir()
	r := runIn(t, dir, nil, "bench", "--db", "sqlite:"+filepath.Join(dir, "b.db"), "--json", "--phases", "drain",
		"--jobs", "200", "--workers", "20", "--retry-every", "10", "--timeout", "60s")
	if r.code != 0 {
		t.Fatalf("bench: %s", r)
	}
	var rep bench.Report
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("bench --json: %v\n%s", err, r)
	}
	if rep.RetryEvery != 10 || len(rep.Drain) == 0 {
		t.Fatalf("report: retry_every %d, %d drains; want 10 and some", rep.RetryEvery, len(rep.Drain))
	}
	for _, d := range rep.Drain {
		if d.Retried != 20 {
			t.Errorf("drain with %d workers retried %d jobs, want 20 (ids 10, 20, ... 200)", d.Workers, d.Retried)
		}
	}
	if r := runIn(t, dir, nil, "bench", "--db", "sqlite:"+filepath.Join(dir, "b.db"), "--retry-every", "-1"); r.code != 2 {
		t.Errorf("--retry-every -1: exit %d, want 2 (a usage error): %s", r.code, r)
	}
}
