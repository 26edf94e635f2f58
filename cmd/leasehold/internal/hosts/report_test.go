package hosts

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// cleanStep is a step whose jobs were all completed exactly once.
func cleanStep(procs int, rate float64) Step {
	return Step{Procs: procs, JobsPerSec: rate,
		Check: Check{Inserted: 10, Jobs: 10, Completed: 10, ExactlyOnce: 10, HandlerRuns: 10, Claims: 10}}
}

// TestVerdictOfAbortedSweep checks that only a sweep that ran to its end,
// with at least one step, gets the all-good verdict, in the table and in
// the JSON: an aborted sweep (even with no step) says INCOMPLETE and its
// error, and is not OK.
func TestVerdictOfAbortedSweep(t *testing.T) {
	const abort = "hosts: 4 processes: 12 jobs still pending or processing after 5m0s"
	cases := []struct {
		name string
		rep  Report
		ok   bool
		want []string
	}{
		{"no step", Report{Jobs: 10}, false, []string{"INCOMPLETE: no step was measured"}},
		{"aborted before the first step", Report{Jobs: 10, Aborted: abort}, false,
			[]string{"INCOMPLETE: the sweep stopped after 0 step(s): " + abort}},
		{"aborted after a clean step", Report{Jobs: 10, Steps: []Step{cleanStep(1, 1000)}, Aborted: abort}, false,
			[]string{"INCOMPLETE: the sweep stopped after 1 step(s): " + abort}},
		{"failed and aborted", Report{Jobs: 10, Steps: []Step{{Procs: 1, Check: Check{Inserted: 10}}}, Aborted: abort}, false,
			[]string{verdictFailed, "INCOMPLETE"}},
		{"complete", Report{Jobs: 10, Steps: []Step{cleanStep(1, 1000), cleanStep(2, 1900)}}, true, []string{verdictOK}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.rep.OK() != c.ok {
				t.Errorf("OK() = %v, want %v", c.rep.OK(), c.ok)
			}
			var out bytes.Buffer
			if err := c.rep.Print(&out); err != nil {
				t.Fatal(err)
			}
			raw, err := json.Marshal(&c.rep)
			if err != nil {
				t.Fatal(err)
			}
			var js struct {
				Verdict string `json:"verdict"`
				OK      bool   `json:"ok"`
				Aborted string `json:"aborted"`
			}
			if err := json.Unmarshal(raw, &js); err != nil {
				t.Fatal(err)
			}
			if js.OK != c.ok || js.Aborted != c.rep.Aborted {
				t.Errorf("JSON ok %v, aborted %q; want %v, %q", js.OK, js.Aborted, c.ok, c.rep.Aborted)
			}
			for _, w := range c.want {
				if !strings.Contains(out.String(), w) || !strings.Contains(js.Verdict, w) {
					t.Errorf("table:\n%s\nJSON verdict %q\nwant %q in both", out.String(), js.Verdict, w)
				}
			}
			if !c.ok && strings.Contains(out.String()+js.Verdict, verdictOK) {
				t.Errorf("not OK, yet the verdict says %q:\n%s", verdictOK, out.String())
			}
		})
	}
}

// TestTableColumns checks the table's labels: the rate column is relative
// to the first step, whatever its process count, and a ceiling not
// measured prints as "-".
func TestTableColumns(t *testing.T) {
	rep := &Report{Jobs: 10, Steps: []Step{cleanStep(4, 4000), cleanStep(8, 6000)}}
	var out bytes.Buffer
	if err := rep.Print(&out); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(out.String(), "\n")
	var header, second []string
	for i, l := range lines {
		if f := strings.Fields(l); len(f) > 0 && f[0] == "processes" {
			header, second = strings.Split(strings.TrimSpace(l), "  "), strings.Fields(lines[i+2])
		}
	}
	if !strings.Contains(out.String(), "x first step") || strings.Contains(out.String(), "x 1 process") {
		t.Errorf("header %q: want the ratio column labelled \"x first step\"", header)
	}
	// processes, jobs/s, x first step, ceiling, of ceiling, ...
	if len(second) < 5 || second[0] != "8" || second[2] != "1.50" || second[3] != "-" || second[4] != "-" {
		t.Errorf("8-process row %q: want x first step 1.50 and ceiling and of ceiling \"-\"\n%s", second, out.String())
	}
}
