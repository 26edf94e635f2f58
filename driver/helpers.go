package driver

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/leasehold/leasehold/leasetype"
)

// This file holds what the drivers' implementations share (of Finish,
// RescueExpired, Resolve, QueueStats and ListJobs); none of it touches a
// database.

// ValidateFinish returns an error naming the first lease of ps whose
// transition fails Transition.Validate. Finish calls it before writing
// anything.
func ValidateFinish(ps []*FinishParams) error {
	for _, p := range ps {
		if err := p.Transition.Validate(); err != nil {
			return fmt.Errorf("job %d: %w", p.ID, err)
		}
		if p.Spawn != nil {
			return fmt.Errorf("job %d: transition to %s: only RescueExpired moves a job to reconciling", p.ID, p.State)
		}
	}
	return nil
}

// Spawned returns the Spawn of each write of ps whose id is in applied,
// in the order of ps, with the id of the job each write moved: the jobs a
// driver's RescueExpired inserts in its transaction once the moves are
// written.
func Spawned(ps []*FinishParams, applied []int64) (spawn []*InsertParams, by []int64) {
	done := make(map[int64]bool, len(applied))
	for _, id := range applied {
		done[id] = true
	}
	for _, p := range ps {
		if p.Spawn != nil && done[p.ID] {
			spawn, by = append(spawn, p.Spawn), append(by, p.ID)
		}
	}
	return spawn, by
}

// NoteSpawned sets the ReconcileJobID of each job of rescued that by
// (from Spawned) names, to the job res (the insert of spawn, index by
// index) inserted for it; a duplicate stands for a job that existed.
func NoteSpawned(rescued []*leasetype.RescuedJob, by []int64, res []*leasetype.InsertResult) {
	ids := make(map[int64]int64, len(by))
	for i, id := range by {
		if i < len(res) && !res[i].Duplicate {
			ids[id] = res[i].Job.ID
		}
	}
	for _, r := range rescued {
		r.ReconcileJobID = ids[r.ID]
	}
}

// ValidateResolve returns an error unless p is a resolution a driver may
// apply: both leases named, and a transition Validate accepts to a state
// other than reconciling.
func ValidateResolve(p *ResolveParams) error {
	if p.ID <= 0 || p.Owner == "" || p.JobID <= 0 {
		return fmt.Errorf("resolve: reconcile lease %d (owner %q) or job %d missing", p.ID, p.Owner, p.JobID)
	}
	if err := p.Transition.Validate(); err != nil {
		return fmt.Errorf("resolve job %d: %w", p.JobID, err)
	}
	if p.State == leasetype.StateReconciling {
		return fmt.Errorf("resolve job %d: a resolution leaves reconciling", p.JobID)
	}
	return nil
}

// Uniform reports whether every lease of ps has one owner and one
// transition: a batch a driver may write with the transition's fields as
// scalar parameters of one statement, instead of one value per lease.
func Uniform(ps []*FinishParams) bool {
	for _, p := range ps {
		if p.Owner != ps[0].Owner || p.Transition != ps[0].Transition {
			return false
		}
	}
	return true
}

// UniformGroups splits ps into batches Uniform accepts: the leases of
// each owner and transition, in the order of ps, the groups in the order
// of their first lease. A driver may write a large group with its
// uniform statement and only the others lease by lease.
func UniformGroups(ps []*FinishParams) [][]*FinishParams {
	type key struct {
		owner string
		t     Transition
	}
	at := map[key]int{}
	var groups [][]*FinishParams
	for _, p := range ps {
		k := key{p.Owner, p.Transition}
		i, ok := at[k]
		if !ok {
			i = len(groups)
			at[k] = i
			groups = append(groups, nil)
		}
		groups[i] = append(groups[i], p)
	}
	return groups
}

// DefaultRescueLimit is how many jobs one RescueExpired moves at most
// when RescueParams.Limit is 0.
const DefaultRescueLimit = 1000

// RescueLimit returns how many jobs RescueExpired with p may move at
// most, or an error when p has no Decide.
func RescueLimit(p *RescueParams) (int, error) {
	if p.Decide == nil {
		return 0, errors.New("RescueParams.Decide is nil")
	}
	if p.Limit <= 0 {
		return DefaultRescueLimit, nil
	}
	return p.Limit, nil
}

// RescueWrites returns the fenced write of each job in jobs (processing
// jobs whose lease expired, as a driver's RescueExpired read them) with
// the transition decide gives it, index by index. It returns an error
// when a transition fails Validate. It is for drivers implementing
// RescueExpired.
func RescueWrites(jobs []*leasetype.JobRow, decide func(*leasetype.JobRow) Transition) ([]*FinishParams, error) {
	ps := make([]*FinishParams, len(jobs))
	for i, j := range jobs {
		t := decide(j)
		if err := t.Validate(); err != nil {
			return nil, fmt.Errorf("job %d: %w", j.ID, err)
		}
		ps[i] = &FinishParams{ID: j.ID, Owner: j.LeaseOwner, Attempt: j.Attempt, Transition: t}
	}
	return ps, nil
}

// Rescued returns, ordered by id, what RescueExpired reports for each job
// of jobs whose write (ps, index by index, from RescueWrites) was applied:
// those named in applied, with the state each write gave its job
// (cancelled where a cancel request turned its transition into
// cancelled). It is for drivers implementing RescueExpired.
func Rescued(jobs []*leasetype.JobRow, ps []*FinishParams, applied []FinishResult) []*leasetype.RescuedJob {
	done := make(map[int64]FinishResult, len(applied))
	for _, r := range applied {
		done[r.ID] = r
	}
	out := make([]*leasetype.RescuedJob, 0, len(applied))
	for i, j := range jobs {
		r, ok := done[j.ID]
		if !ok {
			continue
		}
		state := ps[i].State
		if r.Cancelled {
			state = leasetype.StateCancelled
		}
		out = append(out, &leasetype.RescuedJob{
			ID: j.ID, Queue: j.Queue, Kind: j.Kind, Attempt: j.Attempt, Owner: j.LeaseOwner, NewState: state,
		})
	}
	slices.SortFunc(out, func(a, b *leasetype.RescuedJob) int { return cmp.Compare(a.ID, b.ID) })
	return out
}

// MergePaused marks the queues of stats (sorted by queue) that are in
// paused, with the time each was paused, and adds an empty entry for each
// paused queue that has no jobs, keeping the result sorted by queue. It
// is for drivers implementing QueueStats.
func MergePaused(stats []*leasetype.QueueStats, paused map[string]time.Time) []*leasetype.QueueStats {
	seen := make(map[string]bool, len(stats))
	for _, s := range stats {
		seen[s.Queue] = true
		if at, ok := paused[s.Queue]; ok {
			s.Paused, s.PausedAt = true, at
		}
	}
	added := false
	for q, at := range paused {
		if !seen[q] {
			stats = append(stats, &leasetype.QueueStats{
				Queue: q, Counts: map[leasetype.JobState]int64{}, Paused: true, PausedAt: at,
			})
			added = true
		}
	}
	if added {
		slices.SortFunc(stats, func(a, b *leasetype.QueueStats) int { return cmp.Compare(a.Queue, b.Queue) })
	}
	return stats
}

// SearchFold returns s with its ASCII letters in lower case and every
// other character unchanged: how drivers compare ListParams.Search with
// the string values of a job, the same whatever the database's locale.
func SearchFold(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}
