package demo

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
	"github.com/leasehold/leasehold/cmd/leasehold/internal/payments"
)

// ReconcileSummary is the outcome of the reconciliation story. Figures
// come from the database (jobs, attempt history, ledger) and the
// provider.
type ReconcileSummary struct {
	Database       string `json:"database"`
	Queue          string `json:"queue"`
	ReconcileQueue string `json:"reconcile_queue"`
	Payments       int    `json:"payments"`
	Completed      int    `json:"completed"`
	LedgerRows     int64  `json:"ledger_rows"`
	Charges        int    `json:"charges"`
	ChargedTwice   int    `json:"charged_twice"`
	// Killed are the workers SIGKILLed right after a charge;
	// KilledCharged the charges their leases made and never recorded
	// (but for those whose webhook was lost too: counted once, below).
	Killed        []string `json:"killed_workers"`
	KilledCharged int      `json:"charged_then_killed"`
	// LeaseLostCharged counts the charges of workers not killed whose
	// lease ended before they recorded them: on a loaded machine a worker
	// whose charge stalls can fail to renew its lease in time, and its
	// reconcile job heals the payment (webhooks lost counted below).
	LeaseLostCharged int `json:"charged_then_lease_lost"`
	// WebhooksLost counts charges the provider accepted without an answer.
	WebhooksLost int `json:"webhooks_lost"`
	// ChargedWhilePending = KilledCharged + LeaseLostCharged +
	// WebhooksLost: payments the provider charged while the system showed
	// them pending.
	ChargedWhilePending int `json:"charged_while_pending"`
	// HealedByReconciler counts payment jobs resolved as completed by the
	// reconcile job of their expired lease; RetriedByReconciler those sent
	// back to be charged (the provider had no charge); HealedByScan the
	// heal jobs of the scan that recorded a charge.
	HealedByReconciler  int      `json:"healed_by_reconciler"`
	RetriedByReconciler int      `json:"retried_by_reconciler"`
	HealedByScan        int      `json:"healed_by_scan"`
	Healed              int      `json:"healed"`
	Seconds             float64  `json:"seconds"`
	OK                  bool     `json:"ok"`
	Problems            []string `json:"problems,omitempty"`
}

// summarizeReconcile gathers the figures and checks them.
func (d *demo) summarizeReconcile(ctx context.Context) (*ReconcileSummary, error) {
	ps := d.provider.Stats()
	s := &ReconcileSummary{
		Database: d.db.Target.String(), Queue: d.queue, ReconcileQueue: d.rec.queue, Payments: d.o.Payments,
		Charges: ps.Charges, ChargedTwice: ps.ChargedTwice, WebhooksLost: ps.WebhooksLost,
	}
	leases, err := d.countReconciled(ctx, s)
	if err != nil {
		return nil, err
	}
	killed := map[string]bool{}
	for _, p := range d.rec.killed {
		s.Killed = append(s.Killed, p.Name())
		killed[p.Owner()] = true
	}
	for _, req := range d.provider.Made() {
		lost := d.provider.WebhookLost(req.IdempotencyKey)
		lease := [2]int64{req.JobID, int64(req.Attempt)}
		switch {
		case lost || leases.completed[lease]:
		case killed[req.Owner]:
			s.KilledCharged++
		case leases.expired[lease]:
			s.LeaseLostCharged++
		}
	}
	heals, err := d.client.ListJobs(ctx, &leasehold.ListParams{Queue: d.rec.queue, Kind: payments.HealKind,
		States: []leasehold.JobState{leasehold.StateCompleted}, Limit: 10000})
	if err != nil {
		return nil, fmt.Errorf("list heal jobs: %w", err)
	}
	s.HealedByScan = len(heals)
	if s.LedgerRows, err = d.ledger.Count(ctx, d.paymentPrefix()); err != nil {
		return nil, err
	}
	s.ChargedWhilePending = s.KilledCharged + s.LeaseLostCharged + s.WebhooksLost
	s.Healed = s.HealedByReconciler + s.HealedByScan
	s.Seconds = time.Since(d.start).Seconds()
	s.check()
	return s, nil
}

// paymentLeases are leases (job, attempt) of payment jobs by how they
// ended: completed the payment themselves, or expired.
type paymentLeases struct{ completed, expired map[[2]int64]bool }

// countReconciled reads every payment job and its history: completed
// jobs, and the resolutions of their reconcilers. It returns how the
// payments' leases ended.
func (d *demo) countReconciled(ctx context.Context, s *ReconcileSummary) (paymentLeases, error) {
	out := paymentLeases{completed: map[[2]int64]bool{}, expired: map[[2]int64]bool{}}
	jobs, err := d.client.ListJobs(ctx, &leasehold.ListParams{Queue: d.queue, Limit: 10000})
	if err != nil {
		return out, fmt.Errorf("list payment jobs: %w", err)
	}
	for _, j := range jobs {
		info, err := d.client.GetJob(ctx, j.ID)
		if err != nil {
			return out, fmt.Errorf("read job %d: %w", j.ID, err)
		}
		if info.State == leasehold.StateCompleted {
			s.Completed++
		}
		for _, a := range info.Attempts {
			lease := [2]int64{j.ID, int64(a.Attempt)}
			if a.Outcome == leasehold.OutcomeLeaseExpired {
				out.expired[lease] = true
			}
			switch {
			case a.Outcome == leasehold.OutcomeCompleted:
				out.completed[lease] = true
			case strings.HasPrefix(a.Resolution, leasehold.ResolveComplete.String()+" by"):
				s.HealedByReconciler++
			case strings.HasPrefix(a.Resolution, leasehold.ResolveRetry.String()+" by"):
				s.RetriedByReconciler++
			}
		}
	}
	return out, nil
}

// check sets OK and lists what does not add up.
func (s *ReconcileSummary) check() {
	n := s.Payments
	add := func(format string, args ...any) { s.Problems = append(s.Problems, fmt.Sprintf(format, args...)) }
	if s.Completed != n {
		add("%d of %d payments completed", s.Completed, n)
	}
	if s.LedgerRows != int64(n) || s.Charges != n {
		add("%d ledger rows and %d charges for %d payments", s.LedgerRows, s.Charges, n)
	}
	if s.ChargedTwice != 0 {
		add("%d payments charged twice", s.ChargedTwice)
	}
	if s.Healed != s.ChargedWhilePending {
		add("%d payments healed, but the provider charged %d while the system showed them pending", s.Healed, s.ChargedWhilePending)
	}
	s.OK = len(s.Problems) == 0
}

// Print writes the summary for people.
func (s *ReconcileSummary) Print(w io.Writer) {
	fmt.Fprintf(w, "\nSummary (%s, %.1fs)\n", s.Database, s.Seconds)
	t := cli.NewTable(w)
	t.Row("  payments completed", fmt.Sprint(s.Completed), fmt.Sprintf("(of %d)", s.Payments))
	t.Row("  charged while pending", fmt.Sprint(s.ChargedWhilePending),
		fmt.Sprintf("(the provider charged them, the system showed them pending: %d whose worker was SIGKILLed right after the charge (%s), %d whose worker lost its lease first, %d lost webhooks)",
			s.KilledCharged, strings.Join(s.Killed, ", "), s.LeaseLostCharged, s.WebhooksLost))
	t.Row("  healed", fmt.Sprint(s.Healed), fmt.Sprintf("(%d by the reconcile job of their expired lease, %d by the scan's heal jobs; each in one transaction with its fenced completion)",
		s.HealedByReconciler, s.HealedByScan))
	t.Row("  sent back to be charged", fmt.Sprint(s.RetriedByReconciler), "(expired leases whose charge the provider never received)")
	t.Row("  charged twice", fmt.Sprint(s.ChargedTwice), "(must be 0)")
	t.Row("  ledger rows", fmt.Sprint(s.LedgerRows), fmt.Sprintf("(charges: %d)", s.Charges))
	_ = t.Flush()
	if s.OK {
		fmt.Fprintf(w, "OK: %d payments, %d charges, %d ledger rows; %d charged while pending, %d healed, none charged twice.\n",
			s.Payments, s.Charges, s.LedgerRows, s.ChargedWhilePending, s.Healed)
		return
	}
	for _, p := range s.Problems {
		fmt.Fprintf(w, "FAIL: %s\n", p)
	}
}
