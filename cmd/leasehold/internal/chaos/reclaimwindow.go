package chaos

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// claimTally is what one worker claimed in a queue over a span.
type claimTally struct {
	takeovers, pending int
	lo, hi             int64 // lowest and highest job id claimed
}

// claimsIn says, for a reclaim over the bound, what happened in o's
// queue while it waited (w: from when its lease had run out at
// the latest to its claim): each worker's claims there, takeovers apart,
// with the range of job ids, and the workers that claimed nothing although
// the bound counts them (who) as able to claim o at some time in w. A
// worker that claimed newer jobs meanwhile points at a claim that passed
// the orphan over; one that claimed nothing, at a worker that could not
// claim although the bound's model says it could.
func claimsIn(f *dbFacts, o orphan, w span, who claimers) string {
	by := map[string]*claimTally{}
	for id, as := range f.attempts {
		if f.queues[id] != o.queue {
			continue
		}
		for i, a := range as {
			if a.claimed < w.from || a.claimed >= w.to {
				continue
			}
			t := by[a.owner]
			if t == nil {
				t = &claimTally{lo: id, hi: id}
				by[a.owner] = t
			}
			t.lo, t.hi = min(t.lo, id), max(t.hi, id)
			if i > 0 && as[i-1].outcome == "lease_expired" && as[i-1].ended == a.claimed {
				t.takeovers++
			} else {
				t.pending++
			}
		}
	}
	var parts []string
	for _, owner := range slices.Sorted(maps.Keys(by)) {
		t := by[owner]
		parts = append(parts, fmt.Sprintf("%s claimed %d pending and %d taken over (jobs %d-%d)",
			shortOwner(owner), t.pending, t.takeovers, t.lo, t.hi))
	}
	var idle []string
	for _, l := range who.lives {
		if by[l.owner] == nil && uncovered(w, who.availableTo(l, o)) < w.to-w.from {
			idle = append(idle, shortOwner(l.owner))
		}
	}
	if len(idle) > 0 {
		parts = append(parts, "able to claim but claimed nothing: "+strings.Join(idle, ", "))
	}
	if len(parts) == 0 {
		return "no claims in the queue meanwhile"
	}
	return strings.Join(parts, "; ")
}

// shortOwner is a worker's owner name without the run's prefix
// ("chaos-73ca9e-w1.7" is w1.7).
func shortOwner(owner string) string {
	if i := strings.LastIndexByte(owner, '-'); i >= 0 {
		return owner[i+1:]
	}
	return owner
}
