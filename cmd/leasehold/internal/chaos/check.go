package chaos

import (
	"context"
	"fmt"
	"slices"
	"strings"
)

// check reads the database once the workers stopped and computes the
// report.
func (h *harness) check(ctx context.Context) (*Report, error) {
	o := h.o
	h.heldSettled()
	r := &Report{
		Database: h.ns.describe(), Workers: o.Workers, Concurrency: o.Concurrency,
		TTLSeconds: o.TTL.Seconds(), WatcherSeconds: o.WatcherInterval.Seconds(), PollSeconds: o.PollInterval.Seconds(),
		Seed: o.Seed, Unfenced: Unfenced, WorkerProcesses: len(h.fleet.All()),
		Faults: FaultFigures{Kills: h.sched.kills, Freezes: h.sched.freezes, Outages: h.sched.outages, Crashes: h.sched.crashes},
	}
	db, err := h.db.SQL()
	if err != nil {
		return nil, err
	}
	f, err := loadFacts(ctx, db, h.ns.target.Dialect)
	if err != nil {
		return nil, err
	}
	refusals, renewals := h.facts.snapshot()
	h.countJobs(r, f)
	countReconciles(r, f)
	h.countEffects(r, f, refusals)
	h.countWorkers(r)
	h.countNetFaults(r, refusals)
	ps := h.provider.Stats()
	r.Provider = ProviderFigures{Requests: ps.Requests, Charges: ps.Charges, Replays: ps.Replays, Stalls: ps.Stalls,
		Lookups: ps.Lookups}
	ov := overlaps(f, renewals, o.TTL.Microseconds())
	r.Leases = LeaseFigures{PairsChecked: ov.pairs, Expired: ov.expired, Evidenced: ov.evidenced,
		Overlapping: len(ov.jobs), Examples: ov.examples, Inversions: ov.inversions}
	h.reclaims(r, f)
	h.countFailover(ctx, r, f)
	r.Invariants = h.verdicts(r)
	return r, nil
}

// maxNotCompleted is how many failed or cancelled payments the report
// names.
const maxNotCompleted = 5

// countJobs counts the payments by final state and their attempts, and
// names the first that ended failed or cancelled.
func (h *harness) countJobs(r *Report, f *dbFacts) {
	j := &r.Jobs
	j.Inserted = h.o.Jobs
	var ended []int64 // failed or cancelled
	for id, job := range f.jobs {
		switch job.status {
		case "completed":
			j.Completed++
		case "failed":
			j.Failed++
			ended = append(ended, id)
		case "cancelled":
			j.Cancelled++
			ended = append(ended, id)
		case "pending":
			j.Pending++
		case "processing":
			j.Processing++
		case "stuck":
			j.Stuck++
		case "reconciling":
			j.Reconciling++
		}
	}
	for id, as := range f.attempts {
		if _, ok := f.jobs[id]; !ok {
			continue // a reconcile job
		}
		j.Attempts += len(as)
		for _, a := range as {
			if a.outcome == "lease_expired" {
				j.Expired++
			}
		}
	}
	slices.Sort(ended)
	for _, id := range ended[:min(len(ended), maxNotCompleted)] {
		job := f.jobs[id]
		j.NotCompleted = append(j.NotCompleted, fmt.Sprintf("job %d %s at attempt %d", id, job.status, job.attempt))
	}
}

// countEffects compares the ledger with the jobs, their history and the
// refused completions.
func (h *harness) countEffects(r *Report, f *dbFacts, refusals []timedRefusal) {
	e := &r.Effects
	e.Rows = len(f.ledger)
	perJob := map[int64]int{}
	written := map[refusal]bool{}
	completer, reconciled := completers(f) // the lease that completed each job
	for _, l := range f.ledger {
		perJob[l.job]++
		lease := refusal{Job: l.job, Attempt: l.attempt, Owner: l.owner}
		written[lease] = true
		if completer[l.job] != lease {
			e.NotByCompleter++
		}
	}
	for id, job := range f.jobs {
		n := perJob[id]
		switch {
		case job.status != "completed":
			e.OnUnfinished += n
		case n == 0:
			e.Missing++
		case n == 1:
			e.ExactlyOne++
		default:
			e.Duplicated++
			e.ExtraRows += n - 1
		}
	}
	r.Refusals.Completions = len(refusals)
	for _, rf := range refusals {
		// A reconciler that ran in the process whose lease it reconciles
		// records the charge under that lease's (job, attempt, owner): the
		// row is the reconciler's, not the refused completion's.
		if written[rf.refusal] && !(reconciled[rf.Job] && completer[rf.Job] == rf.refusal) {
			r.Refusals.WithEffect++
			if len(r.Refusals.Examples) < 5 {
				r.Refusals.Examples = append(r.Refusals.Examples, fmt.Sprintf("refused completion of job %d attempt %d by %s has a ledger row",
					rf.Job, rf.Attempt, rf.Owner))
			}
		}
	}
}

// countWorkers sums the workers' last reports.
func (h *harness) countWorkers(r *Report) {
	for _, p := range h.fleet.All() {
		s, _ := p.Stats()
		r.Refusals.LateWrites += s.FinishRefused
		r.Refusals.LeasesLost += s.LeaseLost
		r.Refusals.DBErrors += h.calls(p).Errors()
	}
}

// reclaims measures, for each lease a killed worker held, the time from
// its death to the next claim of the job, by the database clock.
func (h *harness) reclaims(r *Report, f *dbFacts) {
	rc := &r.Reclaim
	slack := h.reclaimSlack()
	bound := (h.o.reclaimTimers() + slack.total()).Microseconds()
	rc.BoundSeconds, rc.SlackSeconds = float64(bound)/1e6, slack.total().Seconds()
	rc.SlackRescue, rc.SlackProbe, rc.SlackClaim = slack.Rescue.Seconds(), slack.Probe.Seconds(), slack.Claim.Seconds()
	// The expired leases of each owner, with the claim that followed.
	type expired struct{ lease, next attemptRow }
	byOwner := map[string][]expired{}
	for _, as := range f.attempts {
		for i, a := range as {
			// A lease resolved by a reconciler was claimed again only once
			// its reconcile job decided: not a reclaim the bound covers.
			if a.outcome == "lease_expired" && a.resolution == "" && i+1 < len(as) {
				byOwner[a.owner] = append(byOwner[a.owner], expired{a, as[i+1]})
			}
		}
	}
	worst := int64(-1)
	who := h.claimersOf(f)
	ttl := h.o.TTL.Microseconds()
	for _, k := range h.sched.kills {
		if k.DeathUS == 0 {
			rc.KillsUntimed++
			continue
		}
		rc.KillsTimed++
		for _, x := range byOwner[k.owner] {
			if x.lease.ended < k.DeathUS {
				continue // expired before the kill (the worker was cut off from the database)
			}
			rc.Orphans++
			delay := x.next.claimed - k.DeathUS
			o := orphan{queue: f.queues[x.lease.job], job: x.lease.job, claimable: leaseEnd(x.lease, ttl)}
			avail := who.availableFor(o)
			allowed := allowedDelay(bound, ttl, k.DeathUS, x.next.claimed, avail) +
				h.heldExtra(x.lease.job, k.DeathUS, x.next.claimed) + startedAfter(x.lease, k.DeathUS)
			if allowed > bound {
				rc.WithNoWorker++
			}
			if delay > worst {
				worst = delay
				rc.Worst = fmt.Sprintf("job %d of %s: claimed again %.3fs after the kill (attempt %d by %s)",
					x.lease.job, k.Worker, float64(delay)/1e6, x.next.attempt, x.next.owner)
			}
			if delay > allowed {
				rc.Over++
				if len(rc.Examples) < 5 {
					rc.Examples = append(rc.Examples, fmt.Sprintf(
						"job %d of %s claimed again %.3fs after the kill, by %s at attempt %d; bound %.3fs (%.3fs of it for time no worker could claim, held rows or a late stamp); from the lease's end at the latest to that claim: %s",
						x.lease.job, k.Worker, float64(delay)/1e6, x.next.owner, x.next.attempt, float64(allowed)/1e6,
						float64(allowed-bound)/1e6,
						claimsIn(f, o, span{k.DeathUS + ttl, x.next.claimed}, who)))
				}
			}
		}
	}
	rc.MaxSeconds = max(float64(worst), 0) / 1e6
}

// startedAfter is how long after the worker's death (database clock) the
// database stamped the lease's claim or last renewal: a statement sent
// before the kill that a loaded server started late, or a kill the
// harness's clock offset timed early. The lease runs out TTL after that
// stamp, not after the death, so that span is allowed on top of the
// bound.
func startedAfter(lease attemptRow, death int64) int64 {
	return max(0, max(lease.claimed, lease.heartbeat)-death)
}

// leaseEnd is when lease ran out: ttl after the database stamped its
// claim or last renewal.
func leaseEnd(lease attemptRow, ttl int64) int64 {
	return max(lease.claimed, lease.heartbeat) + ttl
}

// completers returns, for each completed payment job, the lease whose
// write recorded its charge: the attempt that completed it, or, for a job
// its reconciler resolved as completed, the reconciler's lease, which
// records the charge under the expired attempt's number; reconciled says
// which jobs are of the second sort.
func completers(f *dbFacts) (out map[int64]refusal, reconciled map[int64]bool) {
	out, reconciled = map[int64]refusal{}, map[int64]bool{}
	for id, as := range f.attempts {
		for _, a := range as {
			if a.outcome == "completed" {
				out[id] = refusal{Job: id, Attempt: a.attempt, Owner: a.owner}
			}
			var rid int64
			var ratt int
			if _, err := fmt.Sscanf(a.resolution, "completed by reconcile job %d (attempt %d)", &rid, &ratt); err == nil {
				if ras := f.attempts[rid]; ratt >= 1 && ratt <= len(ras) {
					out[id] = refusal{Job: id, Attempt: a.attempt, Owner: ras[ratt-1].owner}
					reconciled[id] = true
				}
			}
		}
	}
	return out, reconciled
}

// countReconciles counts what the reconcile policy did: expired leases
// moved to reconciling (one reconcile job each), how they were resolved,
// and what is left. An expired lease of ReconcileQueue with no reconcile
// job is counted Missing: the policy was not applied to it.
func countReconciles(r *Report, f *dbFacts) {
	rc := &r.Reconcile
	perExpiry := map[leaseKey]int{}
	live := map[leaseKey]bool{}
	for _, j := range f.reconciles {
		rc.Jobs++
		k := leaseKey{j.job, j.attempt}
		perExpiry[k]++
		if j.status == "pending" || j.status == "processing" {
			live[k] = true
		}
	}
	for _, n := range perExpiry {
		if n > 1 {
			rc.Duplicated++
		}
	}
	for id, job := range f.jobs {
		as := f.attempts[id]
		reconciled := f.queues[id] == ReconcileQueue
		for _, a := range as {
			switch {
			case strings.HasPrefix(a.resolution, "completed by"):
				rc.Completed++
			case strings.HasPrefix(a.resolution, "retried by"):
				rc.Retried++
			}
			if reconciled && a.outcome == "lease_expired" && perExpiry[leaseKey{id, a.attempt}] == 0 {
				rc.Missing++
			}
		}
		if job.status == "reconciling" && !live[leaseKey{id, job.attempt}] {
			rc.Orphaned++
		}
	}
}
