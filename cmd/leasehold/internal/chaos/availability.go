package chaos

import (
	"cmp"
	"math"
	"slices"
	"time"
)

// span is a stretch of the database clock, [from, to) in Unix µs.
type span struct{ from, to int64 }

// uncovered returns how much of w no span of spans covers.
func uncovered(w span, spans []span) int64 {
	if w.to <= w.from {
		return 0
	}
	s := slices.SortedFunc(slices.Values(spans), func(a, b span) int { return cmp.Compare(a.from, b.from) })
	var gap int64
	at := w.from // covered up to here
	for _, c := range s {
		if c.from >= w.to {
			break
		}
		if c.from > at {
			gap += c.from - at
		}
		at = max(at, c.to)
		if at >= w.to {
			return gap
		}
	}
	return gap + w.to - at
}

// minus returns the parts of s that no span of cuts covers.
func minus(s span, cuts []span) []span {
	out := []span{s}
	for _, c := range cuts {
		var next []span
		for _, p := range out {
			if c.to <= p.from || c.from >= p.to {
				next = append(next, p)
				continue
			}
			if c.from > p.from {
				next = append(next, span{p.from, c.from})
			}
			if c.to < p.to {
				next = append(next, span{c.to, p.to})
			}
		}
		out = next
	}
	return out
}

// clockOffset is the database clock less the orchestrator's wall clock
// (µs), from the kills' readings of the database clock (the median, to
// leave out one read slowed down), or 0 without any.
func (h *harness) clockOffset() int64 {
	var offs []int64
	for _, k := range h.sched.kills {
		if k.DeathUS != 0 && !k.deathWall.IsZero() {
			offs = append(offs, k.DeathUS-k.deathWall.UnixMicro())
		}
	}
	if len(offs) == 0 {
		return 0
	}
	slices.Sort(offs)
	return offs[len(offs)/2]
}

// allowedDelay is how long after a worker's death at death (µs) the
// claim at claimed of a lease it held may come: bound, plus the time from
// death + ttl, when the lease had run out at the latest, to the claim in
// which no span of avail (some worker could claim) covers the clock.
func allowedDelay(bound, ttl, death, claimed int64, avail []span) int64 {
	return bound + uncovered(span{death + ttl, claimed}, avail)
}

// workerLife is one worker process as the reclaim bound sees it: from its
// first report to its kill (math.MaxInt64: never killed), less cuts.
type workerLife struct {
	owner string
	life  span
	cuts  []span
}

// claimers is who could claim a dead worker's job, for the reclaim bound:
// the workers' lives, the outages of all (global), and each worker's
// leases by queue with the slots it has in each (slots.go).
type claimers struct {
	lives  []workerLife
	global []span
	uses   map[ownerQueue][]slotUse
	slots  map[string]int
}

// availableFor returns the spans in which some worker could claim o:
// each one's life less its cuts, the outages of all, and the spans in
// which every slot it has in o's queue held a lease it had to prefer.
func (c claimers) availableFor(o orphan) []span {
	var out []span
	for _, l := range c.lives {
		out = append(out, c.availableTo(l, o)...)
	}
	return out
}

// availableTo returns the spans in which worker l could claim o (see
// availableFor).
func (c claimers) availableTo(l workerLife, o orphan) []span {
	cuts := append(slices.Clip(c.global), l.cuts...)
	if n, ok := c.slots[o.queue]; ok {
		cuts = append(cuts, fullSpans(c.uses[ownerQueue{l.owner, o.queue}], n, o)...)
	}
	return minus(l.life, cuts)
}

// availableSpans returns the spans in which some worker of lives could
// claim, slots aside: each one's life less its cuts and the outages of
// all (global).
func availableSpans(lives []workerLife, global []span) []span {
	return claimers{lives: lives, global: global}.availableFor(orphan{})
}

// claimersOf returns who could claim in the run, from f's history: each
// worker process from its first report (its client had started) until
// its kill, less its freezes and the terminations of its sessions until
// it reached the database again, and, for all of them, less the restarts
// and failovers until the slowest worker was back, and the freezes of a
// worker that held SQLite's write lock; and each worker's leases by
// queue, with the slots it has there.
func (h *harness) claimersOf(f *dbFacts) claimers {
	slots := map[string]int{}
	for q, c := range workerQueues(h.o.Concurrency) {
		slots[q] = c.MaxWorkers
	}
	return claimers{lives: h.lives(), global: h.globalOutages(), uses: slotUses(f), slots: slots}
}

// lives returns each worker process's life and cuts (see claimersOf).
func (h *harness) lives() []workerLife {
	off := h.clockOffset()
	db := func(t time.Time) int64 { return t.UnixMicro() + off }
	death := map[string]int64{}
	for _, k := range h.sched.kills {
		death[k.owner] = k.DeathUS
		if k.DeathUS == 0 { // the database was down: when the kill was sent
			death[k.owner] = db(h.start.Add(k.At))
		}
	}
	var lives []workerLife
	for _, p := range h.fleet.All() {
		ready, ok := h.facts.readyAt(p.Owner())
		if !ok {
			continue // never reported: it never claimed
		}
		l := workerLife{owner: p.Owner(), life: span{db(ready), math.MaxInt64}}
		if d, killed := death[p.Owner()]; killed {
			l.life.to = d
		}
		for _, f := range h.sched.freezes {
			if f.p == p && !f.since.IsZero() {
				l.cuts = append(l.cuts, span{db(f.since), db(f.since.Add(f.For))})
			}
		}
		for _, o := range h.sched.outages {
			for _, w := range o.watch {
				if o.Kind == outageTerminate && w.p == p && w.recovered {
					l.cuts = append(l.cuts, span{db(o.start), db(o.end.Add(w.in))})
				}
			}
		}
		lives = append(lives, l)
	}
	return lives
}

// globalOutages are the spans in which no worker could claim: restarts
// and failovers until the slowest worker was back, and the freezes of a
// worker that held SQLite's write lock.
func (h *harness) globalOutages() []span {
	var global []span
	for _, o := range h.sched.outages {
		if (o.Kind == outageRestart || o.Kind == outageFailover) && o.FromUS != 0 && o.ToUS != 0 {
			global = append(global, span{o.FromUS, o.ToUS + o.RecoveredIn.Microseconds()})
		}
	}
	for _, f := range h.sched.freezes {
		if f.HeldWriteLock && f.FromUS != 0 && f.ToUS != 0 {
			global = append(global, span{f.FromUS, f.ToUS})
		}
	}
	return global
}
