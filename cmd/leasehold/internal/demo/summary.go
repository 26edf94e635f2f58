package demo

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/view"
)

// Summary is the outcome of a demo run. Figures come from the database
// (jobs and attempt history), the provider and the surviving workers'
// counters.
type Summary struct {
	Database string `json:"database"`
	Queue    string `json:"queue"`
	Payments int    `json:"payments"`
	// Completed, Failed: payment jobs by final status.
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	// Attempts is the number of leases taken, over all payments.
	Attempts int `json:"attempts"`
	// Rescued counts attempts that ended lease_expired: the lease ran out
	// and the watcher or a new claim took the job back.
	Rescued int `json:"rescued"`
	// LateRefused counts fenced outcome writes (completions, retries,
	// releases at shutdown...) that the database refused because the lease
	// had been taken over (sum of the workers' FinishRefused). Its JSON
	// name, from when the summary called them late completions, is kept.
	LateRefused int64 `json:"late_completions_refused"`
	// LeasesLost counts handlers cancelled because their lease was gone.
	LeasesLost int64 `json:"leases_lost"`
	// Charges is the number of charges the provider recorded; Replays the
	// repeated idempotency keys it answered with the original charge.
	Charges int `json:"charges"`
	Replays int `json:"replays"`
	// Stalls counts stalled charges; StallsHeld those whose job completed
	// on the very lease that made the call (heartbeats kept it).
	Stalls     int               `json:"stalls"`
	StallsHeld int               `json:"stalls_held"`
	LedgerRows int64             `json:"ledger_rows"`
	Killed     string            `json:"killed_worker,omitempty"`
	Frozen     string            `json:"frozen_worker,omitempty"`
	Workers    []view.StatsView  `json:"workers"`
	Seconds    float64           `json:"seconds"`
	OK         bool              `json:"ok"`
	Problems   []string          `json:"problems,omitempty"`
	finalJobs  map[int64]jobFact `json:"-"`
}

// jobFact is what the summary needs of a finished job.
type jobFact struct {
	state   leasehold.JobState
	attempt int
}

// summarize gathers the figures and checks them.
func (d *demo) summarize(ctx context.Context, stats []view.StatsView) (*Summary, error) {
	ps := d.provider.Stats()
	s := &Summary{
		Database: d.db.Target.String(), Queue: d.queue, Payments: d.o.Payments,
		Charges: ps.Charges, Replays: ps.Replays, Stalls: ps.Stalls, Workers: stats,
		finalJobs: map[int64]jobFact{},
	}
	if p := d.story.killed; p != nil {
		s.Killed = p.Name()
	}
	if p := d.story.frozen; p != nil {
		s.Frozen = p.Name()
	}
	for _, w := range stats {
		s.LateRefused += w.FinishRefused
		s.LeasesLost += w.LeaseLost
	}
	if err := d.countJobs(ctx, s); err != nil {
		return nil, err
	}
	d.countStallsHeld(s)
	n, err := d.ledger.Count(ctx, d.paymentPrefix())
	if err != nil {
		return nil, err
	}
	s.LedgerRows = n
	s.Seconds = time.Since(d.start).Seconds()
	s.check()
	return s, nil
}

// countJobs reads every payment job and its history.
func (d *demo) countJobs(ctx context.Context, s *Summary) error {
	var after int64
	for {
		jobs, err := d.client.ListJobs(ctx, &leasehold.ListParams{Queue: d.queue, AfterID: after, Limit: 500})
		if err != nil {
			return fmt.Errorf("list payment jobs: %w", err)
		}
		for _, j := range jobs {
			info, err := d.client.GetJob(ctx, j.ID)
			if err != nil {
				return fmt.Errorf("read job %d: %w", j.ID, err)
			}
			s.addJob(info)
			after = j.ID
		}
		if len(jobs) < 500 {
			return nil
		}
	}
}

func (s *Summary) addJob(info *leasehold.JobInfo) {
	s.finalJobs[info.ID] = jobFact{state: info.State, attempt: info.Attempt}
	switch info.State {
	case leasehold.StateCompleted:
		s.Completed++
	case leasehold.StateFailed, leasehold.StateCancelled:
		s.Failed++
	}
	s.Attempts += info.Attempt
	for _, a := range info.Attempts {
		if a.Outcome == leasehold.OutcomeLeaseExpired {
			s.Rescued++
		}
	}
}

func (d *demo) countStallsHeld(s *Summary) {
	d.stallMu.Lock()
	defer d.stallMu.Unlock()
	for _, req := range d.stallLog {
		f := s.finalJobs[req.JobID]
		if f.state == leasehold.StateCompleted && f.attempt == req.Attempt {
			s.StallsHeld++
		}
	}
}

// check sets OK and lists what went wrong.
func (s *Summary) check() {
	n := s.Payments
	if s.Completed != n {
		s.Problems = append(s.Problems, fmt.Sprintf("%d of %d payments completed", s.Completed, n))
	}
	if s.Charges != n {
		s.Problems = append(s.Problems, fmt.Sprintf("the provider recorded %d charges for %d payments", s.Charges, n))
	}
	if s.LedgerRows != int64(n) {
		s.Problems = append(s.Problems, fmt.Sprintf("the ledger has %d rows for %d payments", s.LedgerRows, n))
	}
	s.OK = len(s.Problems) == 0
}

// Print writes the summary for people.
func (s *Summary) Print(w io.Writer) {
	fmt.Fprintf(w, "\nSummary (%s, %.1fs)\n", s.Database, s.Seconds)
	t := cli.NewTable(w)
	t.Row("  workers", fmt.Sprint(len(s.Workers)+btoi(s.Killed != "")), s.workersNote())
	t.Row("  payments completed", fmt.Sprintf("%d", s.Completed), fmt.Sprintf("(of %d)", s.Payments))
	t.Row("  attempts", fmt.Sprint(s.Attempts), fmt.Sprintf("(%d beyond one per payment)", s.Attempts-s.Payments))
	t.Row("  jobs rescued", fmt.Sprint(s.Rescued), "(leases that expired and were taken back: attempt ended lease_expired)")
	t.Row("  late writes refused", fmt.Sprint(s.LateRefused), "(completions, retries or releases of a lease already taken over, refused by its fence)")
	t.Row("  late handlers stopped", fmt.Sprint(s.LeasesLost), "(cancelled by their worker on finding the lease gone or not renewed in time)")
	t.Row("  charges recorded", fmt.Sprint(s.Charges), fmt.Sprintf("(by the provider; %d repeated idempotency keys got the original charge)", s.Replays))
	t.Row("  ledger rows", fmt.Sprint(s.LedgerRows), "(written in the same transaction as each fenced completion)")
	t.Row("  stalls past the TTL", fmt.Sprint(s.Stalls), fmt.Sprintf("(%d completed on the lease that made the call, kept by heartbeats)", s.StallsHeld))
	_ = t.Flush()
	if s.OK {
		fmt.Fprintf(w, "OK: %d payments, %d charges, %d ledger rows: nothing lost, nothing charged twice.\n", s.Payments, s.Charges, s.LedgerRows)
		return
	}
	for _, p := range s.Problems {
		fmt.Fprintf(w, "FAIL: %s\n", p)
	}
}

func (s *Summary) workersNote() string {
	note := "(none killed: no charge stalled)"
	if s.Killed != "" {
		note = "(" + s.Killed + " SIGKILLed mid-charge"
		if s.Frozen != "" {
			note += ", " + s.Frozen + " frozen mid-charge then resumed"
		}
		note += ")"
	}
	return note
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
