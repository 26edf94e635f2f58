package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
)

// WriteJSONFile writes r to path as indented JSON.
func WriteJSONFile(path string, r *Report) error {
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("bench: encode report: %w", err)
	}
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("bench: write report: %w", err)
	}
	return nil
}

// ReadJSONFile reads a report written by WriteJSONFile.
func ReadJSONFile(path string) (*Report, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("bench: read report: %w", err)
	}
	var r Report
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("bench: decode report %s: %w", path, err)
	}
	return &r, nil
}

// WriteTable prints r as aligned tables.
func WriteTable(w io.Writer, r *Report) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	p := func(format string, args ...any) { fmt.Fprintf(tw, format, args...) }
	fmt.Fprintf(w, "%s (%s), %d CPUs %s/%s, %s; %s\n",
		r.Server, settingsLine(r.Settings), r.Machine.CPUs, r.Machine.OS, r.Machine.Arch, r.Machine.GoVersion, statementSources(r))
	if r.RetryEvery > 0 {
		fmt.Fprintf(w, "drains: every job whose id is a multiple of %d failed, retried an hour later (the ceiling completes every job)\n", r.RetryEvery)
	}
	if r.Insert != nil {
		p("\nbulk insert\tjobs\tseconds\tjobs/s\t\n")
		p("\t%d\t%.2f\t%.0f\t\n", r.Insert.Jobs, r.Insert.Seconds, r.Insert.JobsPerSec)
	}
	if len(r.Drain) > 0 || r.Ceiling != nil {
		writeDrain(p, r)
	}
	if len(r.Latency) > 0 {
		p("\npickup latency\trate/s\tjobs\tp50 ms\tp95 ms\tp99 ms\tmax ms\t\n")
		for _, l := range r.Latency {
			p("%s\t%d\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t\n", l.Mode, l.Rate, l.Jobs, l.P50, l.P95, l.P99, l.Max)
		}
	}
	if len(r.Lease) > 0 {
		p("\nlease overhead\tprocesses\tjobs in flight\tseconds\theartbeat stmts/s\tms each\trows/s\tstmts/s\t\n")
		for _, l := range r.Lease {
			p("\t%d\t%d\t%.1f\t%.2f\t%s\t%.0f\t%.2f\t\n", l.Processes, l.InFlight, l.Seconds, l.HeartbeatsPerSec,
				millis(l.MeanHeartbeatMillis), l.HeartbeatRowsPerSec, l.StatementsPerSec)
		}
	}
	if len(r.Idle) > 0 {
		p("\nidle queues\tmode\tseconds\tstatements/s\tdriver calls/s\tpickup rate/s\tp50 ms\tp95 ms\tp99 ms\tmax ms\t\n")
		for _, l := range r.Idle {
			p("%d\t%s\t%.0f\t%.2f\t%.2f\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t\n", l.Queues, l.Mode, l.Seconds, l.StatementsPerSec,
				l.DriverCallsPerSec, l.Pickup.Rate, l.Pickup.P50, l.Pickup.P95, l.Pickup.P99, l.Pickup.Max)
		}
	}
	if r.Sustained != nil {
		writeSustained(p, r.Sustained)
	}
	return tw.Flush()
}

// statementSources says where the statement counts come from: the
// report's source, and the idle phase's where it differs (without
// pg_stat_statements the idle phase counts the server's transactions,
// not the driver calls).
func statementSources(r *Report) string {
	line := "statements from " + r.StatementSource
	for _, l := range r.Idle {
		if l.Source != "" && l.Source != r.StatementSource {
			return line + "; idle queues' statements/s: " + describeIdleSource(l.Source)
		}
	}
	return line
}

// describeIdleSource names what an idle count of source counts.
func describeIdleSource(source string) string {
	if source == SourceXactCommit {
		return "transactions (" + source + "), each statement outside a transaction one"
	}
	return "from " + source
}

// writeDrain prints the drain and ceiling rows. A drain's "of ceiling" is
// against the ceilings measured just before and after it; "of fastest"
// against the fastest ceiling of the run.
func writeDrain(p func(string, ...any), r *Report) {
	p("\ndrain\tworkers\tjobs\tseconds\tjobs/s\tceiling around\tof ceiling\tof fastest\tclient CPU µs/job\tallocs/job\tstatements/job\tWAL bytes/job\tdead rows/job\tclaims\tfinishes\t\n")
	row := func(name string, d *DrainResult) {
		wal, dead := "-", "-"
		if d.Rows != nil {
			wal, dead = fmt.Sprintf("%.0f", d.Rows.WALBytesPerJob), fmt.Sprintf("%.2f", d.Rows.DeadRowsPerJob)
		}
		p("%s\t%d\t%d\t%.2f\t%.0f\t%s\t%s\t%s\t%s\t%.0f\t%.3f\t%s\t%s\t%d\t%d\t\n", name, d.Workers, d.Jobs, d.Seconds,
			d.JobsPerSec, rate(d.Ceiling), percent(d.CeilingRatio), percent(d.BestRatio), micros(d.Cost.CPUMicrosPerJob),
			d.Cost.AllocsPerJob, d.StatementsPerJob, wal, dead, d.Calls.Claim, d.Calls.Finish)
	}
	for i := range r.Drain {
		name := "leasehold"
		if r.Drain[i].Default {
			name = "leasehold (default)"
		}
		row(name, &r.Drain[i])
	}
	for i := range r.Drain {
		if rs := r.Drain[i].Rounds; len(rs) > 0 {
			p("default drain / ceiling by round\t%s\t\t\t\t\t\t\t\t\t\t\t\t\t\t\n", roundsLine(rs))
		}
	}
	if m := r.DrainMetrics; m != nil {
		writeMetricsDrain(p, row, m)
	}
	if c := r.Ceiling; c != nil {
		p("bare SQL ceiling, median\t%dx%d\t%d\t%.2f\t%.0f\t\t\t\t%s\t%.0f\t%.3f\t\t\t\t\t\n", c.Loops, c.Batch, c.Jobs,
			float64(c.Jobs)/c.JobsPerSec, c.JobsPerSec, micros(c.Cost.CPUMicrosPerJob), c.Cost.AllocsPerJob,
			float64(c.Statements)/float64(c.Jobs))
		p("samples (run order)\t%s\t\t\t\t\t\t\t\t\t\t\t\t\t\t\n", rates(c.Samples))
	}
}

// writeMetricsDrain prints the rows of the drains with metrics and
// tracing: each the median of its rounds, and its ratio to the plain
// drains of the same rounds.
func writeMetricsDrain(p func(string, ...any), row func(string, *DrainResult), m *MetricsDrain) {
	row(fmt.Sprintf("leasehold (default) + metrics, median: %.1f%% of plain", 100*m.Ratio), &m.DrainResult)
	for i := range m.Traced {
		t := &m.Traced[i]
		row(fmt.Sprintf("leasehold (default) + metrics + tracing %s, median: %.1f%% of plain", sampled(t.Sample), 100*t.Ratio), &t.DrainResult)
	}
	p("plain / + metrics jobs/s (by round)\t%s / %s; client CPU µs/job, medians: %s / %s\t\t\t\t\t\t\t\t\t\t\t\t\n",
		rates(m.Plain), rates(m.WithMetrics), micros(m.PlainCPU), micros(m.WithMetricsCPU))
	for _, t := range m.Traced {
		p("+ tracing %s jobs/s (by round)\t%s; client CPU µs/job, median: %s; %d jobs sampled, %d spans\t\t\t\t\t\t\t\t\t\t\t\t\n",
			sampled(t.Sample), rates(t.Rates), micros(t.CPU), t.SampledJobs, t.Spans)
	}
}

// roundsLine formats the rounds of a drain against the ceiling, in run
// order.
func roundsLine(rs []CeilingRound) string {
	s := make([]string, len(rs))
	for i, r := range rs {
		s[i] = fmt.Sprintf("%.0f/%.0f %s", r.Drain, r.Ceiling, percent(r.Ratio))
	}
	return strings.Join(s, ", ")
}

// sampled names a sampling ratio.
func sampled(ratio float64) string {
	if ratio == 1 {
		return "every span"
	}
	return fmt.Sprintf("%g%% sampled", 100*ratio)
}

// rate formats jobs/s, or "-" when not measured.
func rate(v float64) string {
	if v == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f", v)
}

// rates formats a list of jobs/s.
func rates(vs []float64) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = rate(v)
	}
	return strings.Join(s, " ")
}

// micros formats a CPU time per job, or "-" when it was not measured.
func micros(us float64) string {
	if us == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", us)
}

// millis formats a server time, or "-" when it was not measured.
func millis(ms float64) string {
	if ms == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f", ms)
}

func percent(r float64) string {
	if r == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", 100*r)
}

func settingsLine(s map[string]string) string {
	var parts []string
	for _, k := range []string{"synchronous_commit", "fsync", "shared_buffers", "journal_mode", "synchronous"} {
		if v, ok := s[k]; ok {
			parts = append(parts, k+"="+v)
		}
	}
	return strings.Join(parts, " ")
}
