package bench

import (
	"context"
	"fmt"
	"os"
	"runtime/metrics"
	"strconv"
	"strings"
	"time"

	"github.com/leasehold/leasehold"
)

// SustainedWindow is one window of a sustained run: what happened in it,
// and the state at its end.
type SustainedWindow struct {
	// End is the window's end, in seconds since the run started.
	End float64 `json:"end_s"`
	// Inserted and Completed count the jobs inserted and completed in the
	// window; Backlog is the jobs inserted but not completed at its end.
	Inserted  int64 `json:"inserted"`
	Completed int64 `json:"completed"`
	Backlog   int64 `json:"backlog"`
	// Latency is the claim latency of the jobs whose handler started in
	// the window: from the start of the insert to the start of the
	// handler, on one monotonic clock.
	Latency Quantiles `json:"claim_latency_ms"`
	// HeapMiB is the bench process's live heap as of its last garbage
	// collection (runtime/metrics /gc/heap/live:bytes), and RSSMiB its
	// resident set, at the window's end. The process holds the consumer
	// client, the producer client and the bench itself, not the worker
	// alone. The live heap leaves out the garbage not yet collected, which
	// HeapAlloc counts: one sample a window of that would be wherever the
	// collector's sawtooth was.
	HeapMiB float64 `json:"heap_mib"`
	RSSMiB  float64 `json:"rss_mib"`
	// Server figures at the window's end: pg_total_relation_size of the
	// jobs and attempts tables, the sizes of the claim's two partial
	// indexes, the tables' dead and live tuples (pg_stat_user_tables,
	// which the server updates with some delay), the number of
	// autovacuums of the jobs table so far, the age in transactions of the
	// oldest snapshot of the database (age(backend_xmin): vacuum keeps
	// every row version a snapshot may see) and of the held transaction's
	// snapshot (0 when none is open), the tables'
	// updates and HOT updates so far, and the scans of the ready index and
	// the index entries they read so far (pg_stat_user_indexes).
	Server SustainedServer `json:"server"`
	// ReadyEntriesPerScan is the ready index's entries read per scan of
	// it during the window: a claim that walks dead entries its scan
	// cannot skip reads more of them.
	ReadyEntriesPerScan float64 `json:"ready_idx_entries_per_scan"`
	// Held is true when the held transaction was open during the window.
	Held bool `json:"held,omitempty"`
}

// SustainedServer are the server figures of a window.
type SustainedServer struct {
	JobsBytes       int64 `json:"jobs_bytes"`
	AttemptsBytes   int64 `json:"attempts_bytes"`
	ReadyIndexBytes int64 `json:"ready_idx_bytes"`
	LeaseIndexBytes int64 `json:"lease_idx_bytes"`
	JobsDead        int64 `json:"jobs_dead"`
	AttemptsDead    int64 `json:"attempts_dead"`
	JobsLive        int64 `json:"jobs_live"`
	JobsAutovacuums int64 `json:"jobs_autovacuums"`
	OldestXminAge   int64 `json:"oldest_xmin_age"`
	HeldXminAge     int64 `json:"held_xmin_age"`
	JobsHOTUpdates  int64 `json:"jobs_hot_updates"`
	JobsUpdates     int64 `json:"jobs_updates"`
	AttemptsHOT     int64 `json:"attempts_hot_updates"`
	AttemptsUpdates int64 `json:"attempts_updates"`
	ReadyIndexScans int64 `json:"ready_idx_scans"`
	ReadyIndexRead  int64 `json:"ready_idx_tup_read"`
}

// Quantiles are latency quantiles in milliseconds.
type Quantiles struct {
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// serverSQL reads a window's server figures (names resolve in the
// scratch schema, through the pool's search_path).
const serverSQL = `SELECT pg_total_relation_size('leasehold_jobs'), pg_total_relation_size('leasehold_attempts'),
	coalesce(pg_relation_size(to_regclass('leasehold_jobs_ready_idx')), 0),
	coalesce(pg_relation_size(to_regclass('leasehold_jobs_lease_idx')), 0),
	j.n_dead_tup, a.n_dead_tup, j.n_live_tup, j.autovacuum_count,
	(SELECT coalesce(max(age(backend_xmin)), 0) FROM pg_stat_activity WHERE datname = current_database()),
	(SELECT coalesce(max(age(backend_xmin)), 0) FROM pg_stat_activity WHERE pid = $1),
	j.n_tup_hot_upd, j.n_tup_upd, a.n_tup_hot_upd, a.n_tup_upd,
	coalesce(r.idx_scan, 0), coalesce(r.idx_tup_read, 0)
FROM pg_stat_user_tables j CROSS JOIN pg_stat_user_tables a
	LEFT JOIN pg_stat_user_indexes r ON r.indexrelid = to_regclass('leasehold_jobs_ready_idx')
WHERE j.relid = 'leasehold_jobs'::regclass AND a.relid = 'leasehold_attempts'::regclass`

// sample closes a window every r.window until the run's end, printing a
// line per window.
func (r *sustainRun) sample(ctx context.Context, b *bench, s *scratch, c *leasehold.Client, res *SustainedResult) error {
	b.logf("sustained: %6s %8s %8s %8s %8s %8s %8s %7s %7s %8s %8s %9s %9s %8s %12s",
		"t s", "inserted", "done", "backlog", "p50 ms", "p95 ms", "p99 ms", "heapMiB", "rssMiB",
		"jobs MB", "att MB", "jobs dead", "att dead", "xmin age", "entries/scan")
	var (
		done int64
		prev SustainedServer
	)
	for i := range len(r.windows) - 1 {
		end := r.at(time.Duration(i+1) * r.window)
		if err := sleep(ctx, time.Until(end)); err != nil {
			return err
		}
		w := &r.windows[i]
		completed := c.Stats().Completed
		sw := SustainedWindow{End: (time.Duration(i+1) * r.window).Seconds(), Inserted: w.inserted.Load(),
			Completed: completed - done, Backlog: r.inserted.Load() - completed,
			Latency: w.quantiles(), Held: r.heldDuring(i)}
		done = completed
		sw.HeapMiB, sw.RSSMiB = memory()
		if err := s.pool.QueryRow(ctx, serverSQL, r.heldPID.Load()).Scan(&sw.Server.JobsBytes, &sw.Server.AttemptsBytes,
			&sw.Server.ReadyIndexBytes, &sw.Server.LeaseIndexBytes, &sw.Server.JobsDead, &sw.Server.AttemptsDead,
			&sw.Server.JobsLive, &sw.Server.JobsAutovacuums, &sw.Server.OldestXminAge, &sw.Server.HeldXminAge, &sw.Server.JobsHOTUpdates,
			&sw.Server.JobsUpdates, &sw.Server.AttemptsHOT, &sw.Server.AttemptsUpdates, &sw.Server.ReadyIndexScans,
			&sw.Server.ReadyIndexRead); err != nil {
			return fmt.Errorf("server figures: %w", err)
		}
		if scans := sw.Server.ReadyIndexScans - prev.ReadyIndexScans; scans > 0 {
			sw.ReadyEntriesPerScan = float64(sw.Server.ReadyIndexRead-prev.ReadyIndexRead) / float64(scans)
		}
		prev = sw.Server
		res.Windows = append(res.Windows, sw)
		b.logf("sustained: %6.0f %8d %8d %8d %8.1f %8.1f %8.1f %7.1f %7.1f %8.1f %8.1f %9d %9d %8d %12.0f%s", sw.End,
			sw.Inserted, sw.Completed, sw.Backlog, sw.Latency.P50, sw.Latency.P95, sw.Latency.P99, sw.HeapMiB,
			sw.RSSMiB, mb(sw.Server.JobsBytes), mb(sw.Server.AttemptsBytes), sw.Server.JobsDead,
			sw.Server.AttemptsDead, sw.Server.OldestXminAge, sw.ReadyEntriesPerScan, heldMark(sw.Held))
	}
	return nil
}

// heldDuring reports whether the held transaction overlaps window i.
func (r *sustainRun) heldDuring(i int) bool {
	if r.holdFor <= 0 {
		return false
	}
	from, to := time.Duration(i)*r.window, time.Duration(i+1)*r.window
	return from < r.holdAt+r.holdFor && to > r.holdAt
}

// quantiles returns the window's latency quantiles.
func (w *sustainWindowCounts) quantiles() Quantiles {
	var h [histBuckets]int64
	for i := range h {
		h[i] = int64(w.hist[i].Load())
	}
	q := histQuantiles(h[:])
	q.Max = float64(w.maxNanos.Load()) / 1e6
	return q
}

// histQuantiles returns the quantiles of a histogram (nearest rank, each
// bucket standing for its middle); Max is the top non-empty bucket.
func histQuantiles(h []int64) Quantiles {
	var n int64
	top := 0
	for i, c := range h {
		n += c
		if c > 0 {
			top = i
		}
	}
	if n == 0 {
		return Quantiles{}
	}
	at := func(q float64) float64 {
		rank := max(int64(q*float64(n)+0.5), 1)
		var seen int64
		for i, c := range h {
			if seen += c; seen >= rank {
				return bucketValue(i)
			}
		}
		return bucketValue(top)
	}
	return Quantiles{P50: at(0.50), P95: at(0.95), P99: at(0.99), Max: bucketValue(top)}
}

// liveHeapMetric is the heap the last garbage collection found live.
const liveHeapMetric = "/gc/heap/live:bytes"

// memory returns the process's live heap and resident set in MiB (the
// resident set from /proc, 0 where there is none).
func memory() (heap, rss float64) {
	heap = float64(liveHeap()) / (1 << 20)
	if b, err := os.ReadFile("/proc/self/statm"); err == nil {
		if f := strings.Fields(string(b)); len(f) > 1 {
			if pages, err := strconv.ParseInt(f[1], 10, 64); err == nil {
				rss = float64(pages*int64(os.Getpagesize())) / (1 << 20)
			}
		}
	}
	return heap, rss
}

// liveHeap returns the bytes of the heap marked live by the last garbage
// collection (0 before the first).
func liveHeap() uint64 {
	sample := []metrics.Sample{{Name: liveHeapMetric}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 {
		return 0 // not in this Go release
	}
	return sample[0].Value.Uint64()
}

// mb formats bytes as megabytes.
func mb(b int64) float64 { return float64(b) / 1e6 }

func heldMark(held bool) string {
	if held {
		return "  held"
	}
	return ""
}
