package chaos

import (
	"cmp"
	"math"
	"slices"
)

// A worker whose every slot in a queue holds a lease it had to prefer
// could not have claimed a dead worker's job in that queue, however
// alive it was: under load, when kills come faster than the fleet works
// off the leases they orphan, an orphan waits for a free slot behind the
// others. The reclaim bound allows that time, as it allows the time with
// no worker alive. What a worker had to prefer over job J is what a
// correct claim takes before J: an expired lease it took over (a claim
// takes those first), or a pending job before J in claim order. The
// harness's jobs share their priority and were inserted in id order, so
// claim order is id order (a job a reconciler sent back to be charged
// keeps its id: the proxy may then excuse a slot that should have gone
// to J). Nor could a claim made before J's lease ran out have taken J,
// so a slot it filled with a job after J excuses the wait too. A slot
// filled with a job after J once J could be claimed does not: a claim
// that passes J over for newer work is what the bound is there to catch.

// orphan is a dead worker's job as the reclaim bound sees it: its queue,
// its id, and claimable, when its lease ran out (the database clock, µs),
// from when a claim could take it.
type orphan struct {
	queue          string
	job, claimable int64
}

// slotUse is one lease a worker held in a queue: the database clock span
// from its claim to its end (math.MaxInt64 while open), its job, and
// whether its claim took over an expired lease.
type slotUse struct {
	span
	job      int64
	takeover bool
}

// ownerQueue names the slots of one worker in one queue.
type ownerQueue struct{ owner, queue string }

// slotUses returns the leases of f's history by worker and queue. A claim
// took over a lease when the attempt before it expired at the moment of
// the claim: the claim's statement ends the attempt it takes over.
func slotUses(f *dbFacts) map[ownerQueue][]slotUse {
	out := map[ownerQueue][]slotUse{}
	for job, as := range f.attempts {
		q, ok := f.queues[job]
		if !ok {
			continue
		}
		for i, a := range as {
			u := slotUse{span: span{a.claimed, a.ended}, job: job}
			if u.to == 0 {
				u.to = math.MaxInt64
			}
			if i > 0 {
				prev := as[i-1]
				u.takeover = prev.outcome == "lease_expired" && prev.ended == a.claimed
			}
			k := ownerQueue{a.owner, q}
			out[k] = append(out[k], u)
		}
	}
	return out
}

// fullSpans returns the spans in which at least slots of uses that o's
// claim had to prefer (takeovers, jobs before it, and any job claimed
// before o was claimable) were held at once.
func fullSpans(uses []slotUse, slots int, o orphan) []span {
	type edge struct {
		at    int64
		delta int
	}
	var edges []edge
	for _, u := range uses {
		if u.takeover || u.job < o.job || u.from < o.claimable {
			edges = append(edges, edge{u.from, 1}, edge{u.to, -1})
		}
	}
	// Ends before starts at the same instant; a slot freed and taken in
	// one moment then ends a span and starts the next, which are joined.
	slices.SortFunc(edges, func(a, b edge) int { return cmp.Or(cmp.Compare(a.at, b.at), cmp.Compare(a.delta, b.delta)) })
	var (
		out  []span
		held int
		from int64
	)
	for _, e := range edges {
		was := held >= slots
		held += e.delta
		switch now := held >= slots; {
		case now && !was:
			from = e.at
			if n := len(out); n > 0 && out[n-1].to == from {
				from, out = out[n-1].from, out[:n-1]
			}
		case was && !now:
			out = append(out, span{from, e.at})
		}
	}
	return out
}
