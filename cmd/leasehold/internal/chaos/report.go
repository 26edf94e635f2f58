package chaos

import (
	"fmt"
	"io"
	"strings"

	"github.com/leasehold/leasehold/cmd/leasehold/internal/cli"
)

// Report is the outcome of a chaos run: the figures the checks computed,
// the faults injected and each invariant's verdict.
type Report struct {
	Database        string           `json:"database"`
	Workers         int              `json:"workers"`
	Concurrency     int              `json:"concurrency"`
	TTLSeconds      float64          `json:"lease_ttl_seconds"`
	WatcherSeconds  float64          `json:"watcher_interval_seconds"`
	PollSeconds     float64          `json:"poll_interval_seconds"`
	Seconds         float64          `json:"seconds"`
	Seed            uint64           `json:"seed"`
	Unfenced        bool             `json:"unfenced_build,omitempty"`
	Jobs            JobFigures       `json:"jobs"`
	Effects         EffectFigures    `json:"effects"`
	Provider        ProviderFigures  `json:"provider"`
	Refusals        RefusalFigures   `json:"refusals"`
	Leases          LeaseFigures     `json:"leases"`
	Reclaim         ReclaimFigures   `json:"reclaim"`
	Reconcile       ReconcileFigures `json:"reconcile"`
	Faults          FaultFigures     `json:"faults"`
	Net             *NetFigures      `json:"net,omitempty"`
	Failover        *FailoverFigures `json:"failover,omitempty"`
	Invariants      []Invariant      `json:"invariants"`
	Problems        []string         `json:"problems,omitempty"`
	Kept            string           `json:"kept,omitempty"`
	WorkerProcesses int              `json:"worker_processes"`
}

// JobFigures count the jobs by final state, and their attempts.
type JobFigures struct {
	Inserted   int `json:"inserted"`
	Completed  int `json:"completed"`
	Failed     int `json:"failed"`
	Cancelled  int `json:"cancelled"`
	Pending    int `json:"pending"`
	Processing int `json:"processing"`
	Stuck      int `json:"stuck"`
	// Reconciling counts payments left waiting for their reconciler.
	Reconciling int `json:"reconciling"`
	Attempts    int `json:"attempts"`
	// Expired counts attempts whose lease ran out (lease_expired): taken
	// over by a claim or moved by the watcher.
	Expired int `json:"attempts_expired"`
	// NotCompleted names the first few payments, by id, that ended failed
	// or cancelled. Nothing in a run may end one so: each may take 1000
	// attempts, and only bad arguments or a provider's 4xx answer fail
	// one for good, neither of which the harness sends or its provider
	// makes. A payment that ended so was never charged, so the ledger and
	// charge checks, which look at completed payments, cannot see it.
	NotCompleted []string `json:"not_completed,omitempty"`
}

// ReconcileFigures describe the payments under the reconcile policy whose
// lease expired: each went to reconciling with one reconcile job, which
// asked the provider and either recorded the charge and completed the
// payment, or sent it back to be charged.
type ReconcileFigures struct {
	// Jobs counts the reconcile jobs inserted.
	Jobs int `json:"reconcile_jobs"`
	// Completed and Retried count the resolutions.
	Completed int `json:"resolved_completed"`
	Retried   int `json:"resolved_retried"`
	// Duplicated counts expired attempts with more than one reconcile job.
	Duplicated int `json:"expiries_with_two_reconcile_jobs"`
	// Orphaned counts payments left reconciling with no unfinished
	// reconcile job.
	Orphaned int `json:"reconciling_without_reconciler"`
	// Missing counts expired attempts (lease_expired) of payments in
	// ReconcileQueue with no reconcile job: the policy sends every such
	// lease to reconciling with its reconcile job in one transaction, and
	// no claim takes one over.
	Missing int `json:"expiries_without_reconcile_job"`
}

// EffectFigures describe the ledger: one row per completed job, written
// in the same transaction as its fenced completion.
type EffectFigures struct {
	Rows         int `json:"ledger_rows"`
	ExactlyOne   int `json:"completed_jobs_with_one_effect"`
	Missing      int `json:"completed_jobs_without_effect"`
	Duplicated   int `json:"jobs_with_duplicate_effects"`
	ExtraRows    int `json:"duplicate_rows"`
	OnUnfinished int `json:"effects_on_jobs_not_completed"`
	// NotByCompleter counts rows written by a lease other than the one
	// the history says completed the job.
	NotByCompleter int `json:"effects_not_by_completing_lease"`
}

// ProviderFigures are what the stand-in payment provider saw.
type ProviderFigures struct {
	Requests int `json:"requests"`
	Charges  int `json:"charges"` // distinct idempotency keys
	Replays  int `json:"replays"`
	Stalls   int `json:"stalls"`
	Lookups  int `json:"lookups"` // reconcilers asking by idempotency key
}

// RefusalFigures count late writes the fence refused.
type RefusalFigures struct {
	// Completions counts CompleteTx calls refused with ErrLeaseLost,
	// reported by the workers as they happened; WithEffect those whose
	// lease nonetheless has a ledger row.
	Completions int `json:"completions_refused"`
	WithEffect  int `json:"refused_with_effect"`
	// LateWrites and LeasesLost sum the workers' Stats (FinishRefused,
	// LeaseLost) from their last reports (a killed worker's last report
	// may miss its final moments).
	LateWrites int64 `json:"late_writes_refused"`
	LeasesLost int64 `json:"leases_lost"`
	// DBErrors sums the failed database calls of every worker.
	DBErrors int64 `json:"worker_db_errors"`
	// Examples name a few refused completions with an effect.
	Examples []string `json:"examples,omitempty"`
}

// LeaseFigures are the result of the overlap check on the history.
type LeaseFigures struct {
	PairsChecked int      `json:"attempt_pairs_checked"`
	Expired      int      `json:"expired_leases_checked"`
	Evidenced    int      `json:"expired_leases_with_renewal_evidence"`
	Overlapping  int      `json:"jobs_with_overlapping_leases"`
	Examples     []string `json:"examples,omitempty"`
	// Inversions counts claims whose recorded time (their statement's
	// start) precedes the previous attempt's recorded end: not an
	// overlap, since they found the job already given back.
	Inversions int `json:"claims_recorded_before_previous_end"`
}

// ReclaimFigures measure how fast a killed worker's leases were claimed
// again, by the database clock.
type ReclaimFigures struct {
	KillsTimed   int     `json:"kills_timed"`
	KillsUntimed int     `json:"kills_untimed"` // database down at the kill
	Orphans      int     `json:"orphaned_leases"`
	MaxSeconds   float64 `json:"max_seconds"`
	// BoundSeconds is TTL + watcher interval + poll interval + slack; a
	// lease is allowed on top the time, from its death + TTL (when it had
	// run out at the latest) until its claim, in which no worker could
	// claim it: every one killed and not yet started again, frozen, cut
	// off by a termination of its sessions or a restart until it reached
	// the database again, held up by a frozen worker holding SQLite's
	// write lock, or with every slot in the job's queue holding a lease
	// it had to take first (see claimers and slots.go).
	BoundSeconds float64 `json:"bound_seconds"`
	// SlackSeconds is the bound's slack: the workers' 95th percentile of
	// a watcher pass and 99th of a probe and a claim, summed, at least
	// 0.3 s.
	SlackSeconds float64 `json:"slack_seconds"`
	// SlackRescue, SlackProbe and SlackClaim are the percentiles summed.
	SlackRescue  float64  `json:"slack_rescue_seconds"`
	SlackProbe   float64  `json:"slack_probe_seconds"`
	SlackClaim   float64  `json:"slack_claim_seconds"`
	WithNoWorker int      `json:"orphans_allowed_time_with_no_worker"`
	Over         int      `json:"over_bound"`
	Worst        string   `json:"worst,omitempty"`
	Examples     []string `json:"examples,omitempty"`
}

// FaultFigures list the faults injected.
type FaultFigures struct {
	Kills   []*killEvent   `json:"kills"`
	Freezes []*freezeEvent `json:"freezes"`
	Outages []*outage      `json:"outages"`
	Crashes []string       `json:"crashes,omitempty"`
}

// Invariant is one check's verdict.
type Invariant struct {
	Name   string `json:"name"`
	OK     bool   `json:"ok"`
	Detail string `json:"detail"`
}

// OK reports whether every invariant held and the run had no problem.
func (r *Report) OK() bool { return len(r.Failed()) == 0 && len(r.Problems) == 0 }

// Failed names the invariants that failed.
func (r *Report) Failed() []string {
	var names []string
	for _, inv := range r.Invariants {
		if !inv.OK {
			names = append(names, inv.Name)
		}
	}
	return names
}

// Print writes the figures as tables, then the verdicts.
func (r *Report) Print(w io.Writer) {
	fmt.Fprintf(w, "\nleasehold chaos: %s, %d workers x %d, lease TTL %ss, %.1fs", r.Database, r.Workers,
		r.Concurrency, trimFloat(r.TTLSeconds), r.Seconds)
	if r.Unfenced {
		fmt.Fprint(w, "  [UNFENCED TEST BUILD]")
	}
	fmt.Fprintln(w)
	if r.Net != nil {
		fmt.Fprintf(w, "network faults: %s\n", r.Net.where())
	}
	t := cli.NewTable(w, "FIGURE", "VALUE", "")
	j, e, rf, l, rc, f := r.Jobs, r.Effects, r.Refusals, r.Leases, r.Reclaim, r.Faults
	t.Row("jobs inserted", itoa(j.Inserted), "")
	t.Row("jobs completed", itoa(j.Completed), fmt.Sprintf("failed %d, cancelled %d (must be 0)", j.Failed, j.Cancelled))
	t.Row("jobs left pending", itoa(j.Pending+j.Processing+j.Stuck+j.Reconciling), fmt.Sprintf("pending %d, processing %d, stuck %d, reconciling %d (must be 0)",
		j.Pending, j.Processing, j.Stuck, j.Reconciling))
	t.Row("attempts", itoa(j.Attempts), fmt.Sprintf("%d leases expired and were taken back", j.Expired))
	t.Row("ledger effects per completed job", effectsPerJob(e), fmt.Sprintf("%d rows; %d jobs with 1, %d with none, %d with duplicates (%d extra rows), %d on jobs not completed",
		e.Rows, e.ExactlyOne, e.Missing, e.Duplicated, e.ExtraRows, e.OnUnfinished))
	t.Row("effects not by the completing lease", itoa(e.NotByCompleter), "ledger rows whose lease is not the one the history completed")
	t.Row("provider charges", itoa(r.Provider.Charges), fmt.Sprintf("%d requests, %d idempotent replays, %d stalls", r.Provider.Requests, r.Provider.Replays, r.Provider.Stalls))
	t.Row("reconcile jobs", itoa(r.Reconcile.Jobs), fmt.Sprintf("queue %s: %d healed as charged, %d sent back to be charged; %d provider lookups; %d expiries without one (must be 0)",
		ReconcileQueue, r.Reconcile.Completed, r.Reconcile.Retried, r.Provider.Lookups, r.Reconcile.Missing))
	t.Row("completions refused (lease lost)", itoa(rf.Completions), fmt.Sprintf("%d of them left an effect (must be 0)", rf.WithEffect))
	t.Row("late writes refused / leases lost", fmt.Sprintf("%d / %d", rf.LateWrites, rf.LeasesLost), "workers' Stats: FinishRefused / LeaseLost")
	t.Row("jobs with overlapping live leases", itoa(l.Overlapping), fmt.Sprintf("%d attempt pairs, %d expired leases (%d with renewal evidence); %d claims timed before the previous end",
		l.PairsChecked, l.Expired, l.Evidenced, l.Inversions))
	t.Row("longest death-to-reclaim", fmt.Sprintf("%.3fs", rc.MaxSeconds), fmt.Sprintf("bound %.3fs (TTL + watcher + poll + slack %.3fs: p95 rescue %.3fs + p99 probe %.3fs + p99 claim %.3fs, at least 0.3s); %d orphaned leases of %d timed kills, %d over the bound, %d allowed time with no worker able to claim (none alive, or every slot taken first)",
		rc.BoundSeconds, rc.SlackSeconds, rc.SlackRescue, rc.SlackProbe, rc.SlackClaim, rc.Orphans, rc.KillsTimed, rc.Over, rc.WithNoWorker))
	t.Row("faults", fmt.Sprintf("%d kills, %d freezes", len(f.Kills), effectiveFreezes(f.Freezes)), fmt.Sprintf("%d restarts, %d session terminations, %d worker processes, %d crashes%s",
		countOutages(f.Outages, outageRestart), countOutages(f.Outages, outageTerminate), r.WorkerProcesses, len(f.Crashes), lockNote(f.Freezes)))
	restarts := 0
	for _, o := range f.Outages {
		if o.Kind != outageRestart {
			continue
		}
		restarts++
		t.Row(fmt.Sprintf("db restart %d", restarts), fmt.Sprintf("%d errors", o.Errors), fmt.Sprintf("down %.2fs; %d/%d workers recovered on their own within %.2fs",
			o.Took.Seconds(), o.Recovered, o.Workers, o.RecoveredIn.Seconds()))
	}
	if n := countOutages(f.Outages, outageTerminate); n > 0 {
		t.Row("session terminations", itoa(n), terminationSummary(f.Outages))
	}
	r.printNet(t)
	r.printFailover(t)
	t.Row("worker database errors", fmt.Sprint(rf.DBErrors), "failed calls seen by all workers over the run")
	_ = t.Flush()
	fmt.Fprintln(w)
	for _, inv := range r.Invariants {
		verdict := "PASS"
		if !inv.OK {
			verdict = "FAIL"
		}
		fmt.Fprintf(w, "%s  %-28s %s\n", verdict, inv.Name, inv.Detail)
	}
	for _, p := range r.Problems {
		fmt.Fprintf(w, "FAIL  %s\n", p)
	}
	for _, ex := range append(append(append([]string(nil), l.Examples...), rc.Examples...), rf.Examples...) {
		fmt.Fprintf(w, "      %s\n", ex)
	}
	if r.Kept != "" {
		fmt.Fprintf(w, "kept for inspection: %s\n", r.Kept)
	}
}

// lockNote mentions the freezes ended because they held SQLite's lock.
func lockNote(fs []*freezeEvent) string {
	if n := len(fs) - effectiveFreezes(fs); n > 0 {
		return fmt.Sprintf("; %d more freezes ended at once: they held SQLite's write lock", n)
	}
	return ""
}

func effectsPerJob(e EffectFigures) string {
	if e.Missing == 0 && e.Duplicated == 0 && e.OnUnfinished == 0 {
		return "exactly 1"
	}
	return "NOT exactly 1"
}

// countOutages counts the outages of kind that were made: a termination
// the harness could not make (notInjected) is left out.
func countOutages(os []*outage, kind string) int {
	n := 0
	for _, o := range os {
		if o.Kind == kind && !notInjected(o) {
			n++
		}
	}
	return n
}

func terminationSummary(os []*outage) string {
	var sessions, errs int64
	recovered, workers := 0, 0
	for _, o := range os {
		if o.Kind == outageTerminate {
			sessions, errs = sessions+o.Sessions, errs+o.Errors
			recovered, workers = recovered+o.Recovered, workers+o.Workers
		}
	}
	return fmt.Sprintf("%d sessions ended; %d errors; %d/%d workers recovered on their own", sessions, errs, recovered, workers)
}

func itoa(n int) string { return fmt.Sprint(n) }

func trimFloat(f float64) string {
	return strings.TrimRight(strings.TrimRight(fmt.Sprintf("%.3f", f), "0"), ".")
}
