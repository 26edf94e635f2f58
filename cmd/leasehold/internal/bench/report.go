package bench

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"time"

	"github.com/jackc/pgx/v5"
)

// Report holds the figures of one run.
type Report struct {
	Started time.Time `json:"started"`
	Seconds float64   `json:"seconds"`
	Machine Machine   `json:"machine"`
	// Database is "postgres" or "sqlite"; Server its version.
	Database string            `json:"database"`
	Server   string            `json:"server"`
	Settings map[string]string `json:"settings"`
	// StatementSource says where statement counts come from:
	// SourcePgStatStatements or SourceDriverCalls.
	StatementSource string `json:"statement_source"`
	// StatementNote says why pg_stat_statements was not used.
	StatementNote string `json:"statement_note,omitempty"`
	Jobs          int    `json:"jobs"`
	// RetryEvery is Options.RetryEvery: the drains retried every job whose
	// id is a multiple of it.
	RetryEvery int `json:"retry_every,omitempty"`

	Insert *InsertResult `json:"insert,omitempty"`
	Drain  []DrainResult `json:"drain,omitempty"`
	// DrainMetrics is the default drain again with metrics on, when
	// Options.Metrics asked for it.
	DrainMetrics *MetricsDrain   `json:"drain_metrics,omitempty"`
	Ceiling      *CeilingResult  `json:"ceiling,omitempty"`
	Latency      []LatencyResult `json:"latency,omitempty"`
	Lease        []LeaseResult   `json:"lease,omitempty"`
	Idle         []IdleResult    `json:"idle,omitempty"`
	// Sustained is the sustained run, when the run selected it.
	Sustained *SustainedResult `json:"sustained,omitempty"`
	// DefaultRatio is the median of the ratios of the drain with the
	// default worker count to the ceiling, round by round (see
	// DrainResult.Rounds), when both were measured;
	// DefaultBestRatio the same rate over the fastest ceiling of the run.
	DefaultRatio     float64 `json:"default_ratio,omitempty"`
	DefaultBestRatio float64 `json:"default_best_ratio,omitempty"`
}

// Machine describes where the run happened.
type Machine struct {
	Host      string `json:"host"`
	CPUs      int    `json:"cpus"`
	OS        string `json:"os"`
	Arch      string `json:"arch"`
	GoVersion string `json:"go"`
}

// describe fills the machine and database description, and sets up
// statement counting.
func (b *bench) describe(ctx context.Context) error {
	host, _ := os.Hostname()
	b.rep.Machine = Machine{Host: host, CPUs: runtime.NumCPU(), OS: runtime.GOOS, Arch: runtime.GOARCH,
		GoVersion: runtime.Version()}
	if !b.postgres() {
		b.rep.Database, b.rep.Server = "sqlite", "modernc.org/sqlite"
		b.rep.Settings = map[string]string{"journal_mode": "wal", "synchronous": "full"}
		b.rep.StatementSource = SourceDriverCalls
		b.rep.StatementNote = "each driver call is one transaction"
		return nil
	}
	b.rep.Database = "postgres"
	conn, err := pgx.Connect(ctx, b.opts.URL)
	if err != nil {
		return fmt.Errorf("bench: connect: %w", err)
	}
	defer conn.Close(context.Background())
	b.rep.Settings = map[string]string{}
	for _, name := range []string{"server_version", "synchronous_commit", "fsync", "shared_buffers",
		"wal_level", "max_connections"} {
		var v string
		if err := conn.QueryRow(ctx, "SELECT current_setting($1)", name).Scan(&v); err != nil {
			return fmt.Errorf("bench: read setting %s: %w", name, err)
		}
		b.rep.Settings[name] = v
	}
	b.rep.Server = "PostgreSQL " + b.rep.Settings["server_version"]
	delete(b.rep.Settings, "server_version")
	b.stats, err = openPgStats(ctx, b.opts.URL)
	if err != nil {
		b.rep.StatementSource, b.rep.StatementNote = SourceDriverCalls, err.Error()
		b.stats = nil
		return nil
	}
	b.rep.StatementSource = SourcePgStatStatements
	return nil
}

// finish computes the ratios once every phase ran.
func (r *Report) finish() {
	if r.Ceiling == nil {
		return
	}
	r.Ceiling.summarize()
	for i := range r.Drain {
		d := &r.Drain[i]
		switch {
		case len(d.Rounds) > 0:
			d.CeilingRatio = median(roundRatios(d.Rounds))
		case d.Ceiling > 0:
			d.CeilingRatio = d.JobsPerSec / d.Ceiling
		}
		d.BestRatio = d.JobsPerSec / r.Ceiling.BestJobsPerSec
		if d.Default {
			r.DefaultRatio, r.DefaultBestRatio = d.CeilingRatio, d.BestRatio
		}
	}
	if m := r.DrainMetrics; m != nil {
		m.BestRatio = m.JobsPerSec / r.Ceiling.BestJobsPerSec
	}
}
