package cli

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/view"
)

func TestWhen(t *testing.T) {
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		j    leasehold.JobRow
		want string
	}{
		{leasehold.JobRow{State: leasehold.StatePending, RunAt: now.Add(5 * time.Minute)}, "runs in 5m"},
		{leasehold.JobRow{State: leasehold.StatePending, RunAt: now.Add(-3 * time.Second)}, "due 3s ago"},
		{leasehold.JobRow{State: leasehold.StatePending, RunAt: now}, "due now"},
		{leasehold.JobRow{State: leasehold.StateStuck, RunAt: now.Add(-41 * time.Second)}, "waits for an operator"},
		{leasehold.JobRow{State: leasehold.StateReconciling, RunAt: now.Add(-41 * time.Second)}, "reconciler deciding"},
		{leasehold.JobRow{State: leasehold.StateProcessing, RunAt: now.Add(-time.Minute)}, "-"},
		{leasehold.JobRow{State: leasehold.StateCompleted, RunAt: now.Add(-time.Hour), FinishedAt: now.Add(-2 * time.Minute)}, "finished 2m ago"},
		{leasehold.JobRow{State: leasehold.StateCancelled, RunAt: now.Add(-time.Hour)}, "finished"},
	}
	for _, c := range cases {
		if got := When(&c.j, now); got != c.want {
			t.Errorf("When(%s, run at %v, finished %v) = %q, want %q", c.j.State, c.j.RunAt, c.j.FinishedAt, got, c.want)
		}
	}
}

func TestCancelNote(t *testing.T) {
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	for state, want := range map[leasehold.JobState]string{
		leasehold.StateProcessing:  "next heartbeat",
		leasehold.StateReconciling: "reconciler decides first",
		leasehold.StateStuck:       "operator to retry or cancel",
		leasehold.StateCancelled:   "ended cancelled",
		leasehold.StateCompleted:   "ended completed first",
	} {
		j := &leasehold.JobRow{State: state, CancelRequested: true, LeaseUntil: now.Add(time.Minute)}
		if got := cancelNote(j, now); !strings.Contains(got, want) {
			t.Errorf("cancelNote(%s) = %q, want it to say %q", state, got, want)
		}
	}
	expired := &leasehold.JobRow{State: leasehold.StateProcessing, CancelRequested: true, LeaseUntil: now.Add(-time.Second)}
	if got := cancelNote(expired, now); strings.Contains(got, "heartbeat") || !strings.Contains(got, "watcher ends the job") {
		t.Errorf("cancelNote(processing, lease expired) = %q, want the watcher to end it, no heartbeat", got)
	}
	if got := cancelNote(&leasehold.JobRow{State: leasehold.StateProcessing}, now); got != "" {
		t.Errorf("cancelNote without a request = %q", got)
	}
}

// TestRenderJobLastError: a completed job's last error is shown as an
// earlier attempt's, naming it; an unfinished or failed job's as its last
// error.
func TestRenderJobLastError(t *testing.T) {
	now := time.Date(2030, 1, 1, 12, 0, 0, 0, time.UTC)
	attempts := []*leasehold.Attempt{
		{Attempt: 1, Outcome: leasehold.OutcomeRetried, Error: "provider timeout", ClaimedAt: now, EndedAt: now},
		{Attempt: 2, Outcome: leasehold.OutcomeCompleted, ClaimedAt: now, EndedAt: now},
	}
	render := func(state leasehold.JobState) string {
		j := &leasehold.JobRow{ID: 7, Kind: "k", Queue: "q", State: state, Attempt: 2, MaxAttempts: 3,
			LastError: "provider timeout", CreatedAt: now, RunAt: now, FinishedAt: now}
		var b strings.Builder
		if err := RenderJob(&b, &leasehold.JobInfo{JobRow: j, Attempts: attempts}, now); err != nil {
			t.Fatal(err)
		}
		return strings.Join(strings.Fields(b.String()), " ")
	}
	if out := render(leasehold.StateCompleted); strings.Contains(out, "last error") ||
		!strings.Contains(out, "earlier error provider timeout (attempt 1; attempt 2 completed)") {
		t.Errorf("completed job:\n%s\nwant its error shown as attempt 1's, not as its last error", out)
	}
	if out := render(leasehold.StateFailed); !strings.Contains(out, "last error provider timeout") {
		t.Errorf("failed job:\n%s\nwant its last error", out)
	}
}

func TestReadValue(t *testing.T) {
	file := filepath.Join(t.TempDir(), "v.json")
	if err := os.WriteFile(file, []byte("  {\"a\":1}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for in, want := range map[string]string{`{"b":2}`: `{"b":2}`, "@" + file: `{"a":1}`, "-": `{"c":3}`} {
		got, err := ReadValue(t.Context(), "--args", in, strings.NewReader("\n{\"c\":3}\n"))
		if err != nil || got != want {
			t.Errorf("ReadValue(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"@", "@" + file + ".missing", "@" + filepath.Dir(file)} {
		if _, err := ReadValue(t.Context(), "--args", bad, nil); ExitCode(err) != ExitUsage {
			t.Errorf("ReadValue(%q) error = %v, want a usage error", bad, err)
		}
	}
}

func TestStatsSummary(t *testing.T) {
	s := StatsSummary(view.StatsView{Owner: "w", Snoozed: 2, Cancelled: 3, Panics: 4, ClaimedAgain: 5, TakenOver: 6,
		HeartbeatErrors: 7, FinishErrors: 8, ClaimErrors: 9, EventsDropped: 10}, 30*time.Second)
	for _, want := range []string{"snoozed 2,", "cancelled 3,", "panicked 4,", "claimed again 5", "taken over 6,",
		"heartbeat errors 7,", "finish errors 8,", "claim errors 9,", "events dropped 10"} {
		if !strings.Contains(s, want) {
			t.Errorf("StatsSummary lacks %q: %s", want, s)
		}
	}
	if strings.Contains(s, "could not release") {
		t.Errorf("StatsSummary without dropped outcomes: %s", s)
	}
	if s := StatsSummary(view.StatsView{OutcomesDropped: 2}, 30*time.Second); !strings.Contains(s, "could not release 2 leases") || !strings.Contains(s, "TTL (30s)") {
		t.Errorf("StatsSummary with 2 dropped outcomes: %s", s)
	}
}

// TestQueueTableColumns: the queue table has a column per job state, so
// every value sits under its heading: the last one is PAUSED.
func TestQueueTableColumns(t *testing.T) {
	var b strings.Builder
	counts := map[leasehold.JobState]int64{}
	for i, s := range leasehold.AllStates {
		counts[s] = int64(i + 1)
	}
	if err := RenderQueues(&b, []*leasehold.QueueStats{{Queue: "q", Counts: counts, Paused: true}}, time.Hour); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	head, row := strings.Fields(lines[0]), strings.Fields(lines[1])
	// Three headings are two words each: OLDEST PENDING, LIVE LEASES, EXPIRED LEASES.
	if len(head)-3 != len(row) || row[len(row)-1] != "yes" {
		t.Errorf("queue table heading %q, row %q: the columns do not line up", lines[0], lines[1])
	}
	for i, s := range leasehold.AllStates {
		if head[i+1] != strings.ToUpper(string(s)) || row[i+1] != strconv.Itoa(i+1) {
			t.Errorf("column %d: heading %s, value %s; want %s and %d", i+1, head[i+1], row[i+1], strings.ToUpper(string(s)), i+1)
		}
	}
}
