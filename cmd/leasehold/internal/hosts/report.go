package hosts

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"
)

// Report is the result of a run.
type Report struct {
	Started     time.Time  `json:"started"`
	Server      string     `json:"server"`
	CPUs        int        `json:"cpus"`
	Hosts       []HostInfo `json:"hosts"`
	Jobs        int        `json:"jobs"`
	Concurrency int        `json:"concurrency_per_process"`
	// Ceiling are the bare-SQL ceiling's rates, measured before the
	// first step and after each; CeilingJobsPerSec is their median.
	Ceiling           []float64 `json:"ceiling_samples,omitempty"`
	CeilingJobsPerSec float64   `json:"ceiling_jobs_per_sec,omitempty"`
	CeilingLoops      int       `json:"ceiling_loops,omitempty"`
	CeilingBatch      int       `json:"ceiling_batch,omitempty"`
	Steps             []Step    `json:"steps"`
	// LoadBefore and LoadAfter are the machine's load averages
	// (/proc/loadavg: 1, 5 and 15 minutes).
	LoadBefore string `json:"load_before"`
	LoadAfter  string `json:"load_after"`
	// Aborted is the error that ended the sweep before its last step,
	// empty when every step ran: the steps then are only those measured
	// before it.
	Aborted string `json:"aborted,omitempty"`
}

// HostInfo is one namespace.
type HostInfo struct {
	Name string `json:"name"`
	Addr string `json:"addr"`
}

// Step is one process count of the sweep.
type Step struct {
	Procs      int     `json:"processes"`
	JobsPerSec float64 `json:"jobs_per_sec"`
	// Seconds is the drain's time by the database clock, from the queue's
	// resume to the last finish.
	Seconds float64 `json:"seconds"`
	// Connections are the workers' sessions seen on the server once they
	// had all started, each from its namespace's address.
	Connections int `json:"connections"`
	// Ceiling is the mean of the bare-SQL ceilings measured just before
	// and just after the step (0 without them).
	Ceiling float64 `json:"ceiling_jobs_per_sec,omitempty"`
	// Load is the machine's load average over the minute before the
	// drain.
	Load  string `json:"load"`
	Check Check  `json:"check"`
}

// OK reports whether the sweep ran to its end with at least one step,
// and every step completed every job exactly once.
func (r *Report) OK() bool {
	return r.complete() && !r.failed()
}

// complete reports whether the sweep measured a step and was not aborted:
// a sweep that stopped early says nothing of the steps it did not run.
func (r *Report) complete() bool { return len(r.Steps) > 0 && r.Aborted == "" }

// failed reports whether a measured step lost a job or did one twice.
func (r *Report) failed() bool {
	return slices.ContainsFunc(r.Steps, func(s Step) bool { return !s.Check.OK() })
}

// Verdicts of a sweep.
const (
	verdictOK     = "every job of every step completed exactly once"
	verdictFailed = "FAILED: not every job completed exactly once"
)

// Verdict sums the sweep up in a line: FAILED when a measured step lost a
// job or did one twice, INCOMPLETE when it was aborted or measured no
// step (both may hold: the failure is named first), and the all-good
// line only otherwise.
func (r *Report) Verdict() string {
	var parts []string
	if r.failed() {
		parts = append(parts, verdictFailed)
	}
	switch {
	case r.Aborted != "":
		parts = append(parts, fmt.Sprintf("INCOMPLETE: the sweep stopped after %d step(s): %s", len(r.Steps), r.Aborted))
	case len(r.Steps) == 0:
		parts = append(parts, "INCOMPLETE: no step was measured")
	}
	if len(parts) == 0 {
		return verdictOK
	}
	return strings.Join(parts, "; ")
}

// MarshalJSON writes the report with its verdict, so that a JSON file of
// an aborted sweep says so as the table does.
func (r *Report) MarshalJSON() ([]byte, error) {
	type plain Report // without this method
	return json.Marshal(struct {
		*plain
		Verdict string `json:"verdict"`
		OK      bool   `json:"ok"`
	}{(*plain)(r), r.Verdict(), r.OK()})
}

func (r *Report) finish() {
	if n := len(r.Ceiling); n > 0 {
		s := slices.Sorted(slices.Values(r.Ceiling))
		r.CeilingJobsPerSec = (s[(n-1)/2] + s[n/2]) / 2
	}
}

// Print writes the report as a table.
func (r *Report) Print(w io.Writer) error {
	names := make([]string, len(r.Hosts))
	for i, h := range r.Hosts {
		names[i] = h.Name + " " + h.Addr
	}
	fmt.Fprintf(w, "leasehold hosts: %d no-op jobs per step, %d slots per process, %s, %d CPUs\n",
		r.Jobs, r.Concurrency, r.Server, r.CPUs)
	fmt.Fprintf(w, "hosts: %s\n", strings.Join(names, ", "))
	if r.CeilingJobsPerSec > 0 {
		fmt.Fprintf(w, "bare-SQL ceiling (%d loops x %d): median %s jobs/s (before the first step and after each: %s)\n",
			r.CeilingLoops, r.CeilingBatch, rate(r.CeilingJobsPerSec), rates(r.Ceiling))
	}
	fmt.Fprintf(w, "load: %s before, %s after\n\n", r.LoadBefore, r.LoadAfter)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "processes\tjobs/s\tx first step\tceiling\tof ceiling\tseconds\tsessions\tlost\ttwice\tjobs per host\tload 1m\t")
	for _, s := range r.Steps {
		fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%.2f\t%d\t%d\t%d\t%s\t%s\t\n", s.Procs, rate(s.JobsPerSec),
			ratio(s.JobsPerSec, r.Steps[0].JobsPerSec), rateOrDash(s.Ceiling), ratio(s.JobsPerSec, s.Ceiling), s.Seconds,
			s.Connections, s.Check.Lost(), s.Check.Twice(), perHost(s.Check.PerHost, r.Hosts), s.Load)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, s := range r.Steps {
		for _, p := range s.Check.Problems() {
			fmt.Fprintf(w, "%d processes: %s\n", s.Procs, p)
		}
	}
	_, err := fmt.Fprintln(w, r.Verdict())
	return err
}

func rate(v float64) string { return fmt.Sprintf("%.0f", v) }

// rateOrDash is rate, or "-" for a figure not measured (the ceiling with
// NoCeiling).
func rateOrDash(v float64) string {
	if v <= 0 {
		return "-"
	}
	return rate(v)
}

func rates(vs []float64) string {
	s := make([]string, len(vs))
	for i, v := range vs {
		s[i] = rate(v)
	}
	return strings.Join(s, ", ")
}

func ratio(v, base float64) string {
	if base <= 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", v/base)
}

// perHost lists the jobs each namespace completed, in host order.
func perHost(m map[string]int, hosts []HostInfo) string {
	var parts []string
	for _, h := range hosts {
		if n, ok := m[h.Name]; ok {
			parts = append(parts, fmt.Sprint(n))
		}
	}
	return strings.Join(parts, "/")
}
