package chaos

import (
	"fmt"
	"strings"
	"time"
)

// verdicts judges each invariant of the run.
func (h *harness) verdicts(r *Report) []Invariant {
	var out []Invariant
	add := func(name string, ok bool, format string, args ...any) {
		out = append(out, Invariant{Name: name, OK: ok, Detail: fmt.Sprintf(format, args...)})
	}
	j, e, rf, l, rc := r.Jobs, r.Effects, r.Refusals, r.Leases, r.Reclaim
	left := j.Pending + j.Processing + j.Stuck + j.Reconciling
	// Every payment must complete: one that failed or was cancelled was
	// never charged, and the checks below look at completed ones only.
	add("drained", left == 0 && j.Completed == j.Inserted,
		"%d of %d payments completed, %d failed, %d cancelled, %d left pending/processing/stuck/reconciling%s",
		j.Completed, j.Inserted, j.Failed, j.Cancelled, left, listNote(j.NotCompleted))
	rcf := r.Reconcile
	add("one-reconciler-per-expiry", rcf.Duplicated == 0 && rcf.Orphaned == 0 && rcf.Missing == 0,
		"%d reconcile jobs (%d payments healed as charged, %d sent back to be charged); %d expiries with two reconcile jobs, %d with none, %d payments reconciling without one",
		rcf.Jobs, rcf.Completed, rcf.Retried, rcf.Duplicated, rcf.Missing, rcf.Orphaned)
	add("one-effect-per-job", e.Missing == 0 && e.Duplicated == 0 && e.OnUnfinished == 0 && e.ExactlyOne == j.Completed,
		"%d completed jobs: %d with one ledger row, %d with none, %d with duplicates; %d rows on jobs not completed",
		j.Completed, e.ExactlyOne, e.Missing, e.Duplicated, e.OnUnfinished)
	add("effect-by-completing-lease", e.NotByCompleter == 0,
		"%d ledger rows written by a lease the history does not show completing the job", e.NotByCompleter)
	add("charges-match-completions", r.Provider.Charges == j.Completed,
		"the provider charged %d payments (one per idempotency key) for %d completed jobs", r.Provider.Charges, j.Completed)
	freezes := testedFreezes(r.Faults)
	add("refusals-seen", freezes == 0 || rf.Completions > 0,
		"%d completions refused after %d freezes whose worker lived to write late (a frozen worker's late CompleteTx must be refused)", rf.Completions, freezes)
	add("refusals-left-no-effect", rf.WithEffect == 0,
		"%d of %d refused completions left a ledger row", rf.WithEffect, rf.Completions)
	add("no-overlapping-leases", l.Overlapping == 0,
		"%d jobs with two live leases at once (%d attempt pairs checked)", l.Overlapping, l.PairsChecked)
	add("reclaim-within-bound", rc.Over == 0,
		"longest %.3fs from a kill to the next claim, bound %.3fs; %d of %d orphaned leases over it",
		rc.MaxSeconds, rc.BoundSeconds, rc.Over, rc.Orphans)
	add("workers-recovered", h.allRecovered(r), "%s", recoverySummary(r.Faults.Outages))
	add("no-worker-crashed", len(r.Faults.Crashes) == 0, "%d worker processes exited on their own", len(r.Faults.Crashes))
	if r.Net != nil && r.Net.Mode == NetModeNamespaces {
		add("sessions-from-their-host", r.Net.sessionsOK(), "%s", r.Net.sessionsSummary())
	}
	h.failoverVerdicts(add)
	h.excuseAsyncLoss(r, out)
	missing := h.undelivered(r)
	add("faults-delivered", len(missing) == 0, "%s", deliveredSummary(r, missing))
	return out
}

// listNote lists examples after a verdict's figures, if there are any.
func listNote(examples []string) string {
	if len(examples) == 0 {
		return ""
	}
	return " (" + strings.Join(examples, "; ") + ")"
}

// allRecovered reports whether every worker that ran through an outage
// came back on its own, and every restart and failover succeeded. A
// termination the harness could not make (its own statement failed, on a
// server too loaded to answer it) is no worker's failure: it is reported
// as not injected, and faults-delivered fails if none was.
func (h *harness) allRecovered(r *Report) bool {
	for _, o := range r.Faults.Outages {
		if (o.Error != "" && !notInjected(o)) || o.Recovered != o.Workers {
			return false
		}
	}
	return true
}

// notInjected reports whether o is a termination whose statement failed.
func notInjected(o *outage) bool {
	return o.Kind == outageTerminate && o.Error != ""
}

func recoverySummary(os []*outage) string {
	if len(os) == 0 {
		return "no database outage injected"
	}
	var parts []string
	for _, kind := range []string{outageRestart, outageFailover, outageTerminate, outagePartition, outageDelay, outageStall} {
		n, workers, recovered, errs := 0, 0, 0, int64(0)
		var longest time.Duration
		var failed, skipped []string
		for _, o := range os {
			if o.Kind != kind {
				continue
			}
			if notInjected(o) {
				skipped = append(skipped, o.Error)
				continue
			}
			n++
			workers, recovered, errs = workers+o.Workers, recovered+o.Recovered, errs+o.Errors
			longest = max(longest, o.RecoveredIn)
			if o.Error != "" {
				failed = append(failed, o.Error)
			}
		}
		if n+len(skipped) == 0 {
			continue
		}
		s := fmt.Sprintf("%d %s: %d/%d workers back on their own (slowest %.2fs) after %d failed calls",
			n, kind, recovered, workers, longest.Seconds(), errs)
		if len(failed) > 0 {
			s += " (failed: " + strings.Join(failed, "; ") + ")"
		}
		if len(skipped) > 0 {
			s += fmt.Sprintf(" (%d not injected, the harness's statement failed: %s)", len(skipped), strings.Join(skipped, "; "))
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

// undelivered lists the requested faults the run did not inject.
func (h *harness) undelivered(r *Report) []string {
	var missing []string
	if h.o.KillEvery > 0 && len(r.Faults.Kills) == 0 {
		missing = append(missing, "no kill")
	}
	if h.o.FreezeEvery > 0 && effectiveFreezes(r.Faults.Freezes) == 0 {
		missing = append(missing, "no freeze")
	}
	if n := countOutages(r.Faults.Outages, outageRestart); n != h.o.PGRestarts {
		missing = append(missing, fmt.Sprintf("%d of %d restarts", n, h.o.PGRestarts))
	}
	if h.o.PGTerminateEvery > 0 && countOutages(r.Faults.Outages, outageTerminate) == 0 {
		missing = append(missing, "no session termination")
	}
	if h.o.NetFaultEvery > 0 && r.Net.total().Faults == 0 {
		missing = append(missing, "no network fault")
	}
	return missing
}

// lateWriteWindow is how soon after its thaw a frozen worker sends its
// late CompleteTx (it wakes mid-charge, and the write follows the charge
// at once): a freeze whose worker was killed before that had passed, or
// whose database was down then (a restart or failover that began up to
// restartDown before the thaw), tested nothing of the fence, since that
// write never reached the database.
const (
	lateWriteWindow = 250 * time.Millisecond
	restartDown     = time.Second
)

// testedFreezes counts the freezes that lasted (effectiveFreezes) and
// whose worker then lived to write late (cutShort).
func testedFreezes(f FaultFigures) int {
	n := 0
	for _, fr := range f.Freezes {
		if !fr.HeldWriteLock && !cutShort(fr, f) {
			n++
		}
	}
	return n
}

// cutShort reports whether a fault in f kept the worker of fr from
// sending its late write: a kill of it from the freeze to
// lateWriteWindow after its thaw, or a restart or failover of the
// database that began within restartDown before the thaw or
// lateWriteWindow after it.
func cutShort(fr *freezeEvent, f FaultFigures) bool {
	thaw := fr.At + fr.For
	for _, k := range f.Kills {
		if k.Worker == fr.Worker && k.At >= fr.At && k.At <= thaw+lateWriteWindow {
			return true
		}
	}
	for _, o := range f.Outages {
		if (o.Kind == outageRestart || o.Kind == outageFailover) && o.At >= thaw-restartDown && o.At <= thaw+lateWriteWindow {
			return true
		}
	}
	return false
}

// effectiveFreezes counts the freezes that lasted: not those ended at once
// because the worker held SQLite's write lock.
func effectiveFreezes(fs []*freezeEvent) int {
	n := 0
	for _, f := range fs {
		if !f.HeldWriteLock {
			n++
		}
	}
	return n
}

func deliveredSummary(r *Report, missing []string) string {
	s := fmt.Sprintf("%d kills, %d freezes, %d restarts, %d session terminations, %d network faults", len(r.Faults.Kills), effectiveFreezes(r.Faults.Freezes),
		countOutages(r.Faults.Outages, outageRestart), countOutages(r.Faults.Outages, outageTerminate), r.Net.total().Faults)
	if len(missing) > 0 {
		s += " (requested but not injected: " + strings.Join(missing, ", ") + "; the run was too short)"
	}
	return s
}
