package drivertest

import (
	"fmt"
	"sync"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/statemachine"
)

// rescueCase is one expired lease and the state the watcher must give it.
type rescueCase struct {
	queue       string
	maxAttempts int
	cancel      bool
	want        leasehold.JobState
}

// testRescueExpired checks the stuck watcher: expired leases go to
// cancelled (cancel requested), stuck (flagged queue, whatever the
// budget), failed (budget exhausted) or pending, in that precedence; lease fields are cleared,
// finished_at set for terminal states, the history row ended with
// lease_expired, and live leases and pending jobs are not touched. A pass
// without RescueParams.Decide is refused.
func testRescueExpired(c *tc) {
	cases := []rescueCase{
		{"rq", 3, false, leasehold.StatePending},
		{"flagq", 3, false, leasehold.StateStuck},
		{"flagq", 3, false, leasehold.StateStuck},
		{"rq", 1, false, leasehold.StateFailed},
		{"rq", 3, true, leasehold.StateCancelled},
		{"flagq", 1, false, leasehold.StateStuck}, // budget spent: an operator decides
		{"flagq", 1, true, leasehold.StateCancelled},
	}
	var ps []*driver.InsertParams
	for _, rc := range cases {
		p := job(rc.queue, "k")
		p.MaxAttempts = rc.maxAttempts
		ps = append(ps, p)
	}
	ps = append(ps, job("rq", "k"), job("rq", "k")) // a live lease, a pending job
	rows := c.insert(ps...)
	held := map[int64]*leasehold.JobRow{}
	for i, rc := range cases {
		held[rows[i].ID] = c.claimID(c.d, rows[i].ID, "owner-x", shortTTL, false)
		if rc.cancel {
			if _, err := c.d.CancelJob(c.ctx, rows[i].ID); err != nil {
				c.Fatalf("CancelJob(processing): %v", err)
			}
		}
	}
	live := c.claimID(c.d, rows[len(cases)].ID, "owner-x", liveTTL, false)
	c.heartbeat("owner-x", shortTTL, ref(held[rows[0].ID])) // its heartbeat_at is copied to history
	for id := range held {
		held[id] = c.get(id)
	}
	var expired []*leasehold.JobRow
	for _, j := range held {
		expired = append(expired, j)
	}
	c.waitExpired(expired...)
	untouched := []snapshot{c.snap(live.ID), c.snap(rows[len(cases)+1].ID)}

	if res, err := c.d.RescueExpired(c.ctx, &driver.RescueParams{Limit: 100}); err == nil {
		c.Errorf("RescueExpired without Decide = %d jobs, nil; want an error", len(res))
	}
	for _, s := range untouched {
		c.unchanged("RescueExpired without Decide", s)
	}
	before := c.now()
	res, err := c.d.RescueExpired(c.ctx, &driver.RescueParams{Decide: statemachine.Rescuer([]string{"flagq"}), Limit: 100})
	after := c.now()
	if err != nil {
		c.Fatalf("RescueExpired: %v", err)
	}
	got := map[int64]*leasehold.RescuedJob{}
	for _, r := range res {
		got[r.ID] = r
	}
	c.eqIDs("RescueExpired", keys(got), keys(held))
	for i, rc := range cases {
		id := rows[i].ID
		if r := got[id]; r != nil {
			want := leasehold.RescuedJob{ID: id, Queue: rc.queue, Kind: "k", Attempt: 1, Owner: "owner-x", NewState: rc.want}
			c.eq(fmt.Sprintf("RescuedJob %d", id), *r, want)
		}
		c.checkRescued(held[id], rc.want, before, after)
	}
	for _, s := range untouched {
		c.unchanged("RescueExpired on a live lease or pending job", s)
	}
	if again, err := c.d.RescueExpired(c.ctx, &driver.RescueParams{Decide: statemachine.Rescuer([]string{"flagq"}), Limit: 100}); err != nil || len(again) != 0 {
		c.Errorf("second RescueExpired = %d jobs, %v; want none", len(again), err)
	}
	c.operateOnStuck(rows[1].ID, rows[2].ID)
}

// testRescueQueues checks RescueParams.Queues: an empty list moves
// nothing, a list moves the expired leases of its queues only, and nil
// those of every queue.
func testRescueQueues(c *tc) {
	rows := c.insert(job("qa", "k"), job("qb", "k"), job("qb", "k"), job("qc", "k"))
	c.expireAll("owner-x", rows)
	decide := statemachine.Rescuer(nil)
	pass := func(queues []string) []int64 {
		c.Helper()
		res, err := c.d.RescueExpired(c.ctx, &driver.RescueParams{Decide: decide, Limit: 100, Queues: queues})
		if err != nil {
			c.Fatalf("RescueExpired(%q): %v", queues, err)
		}
		var ids []int64
		for _, r := range res {
			ids = append(ids, r.ID)
		}
		return ids
	}
	c.eqIDs("RescueExpired of no queue", pass([]string{}), nil)
	c.eqIDs("RescueExpired of qb and an unknown queue", pass([]string{"qb", "nope"}), []int64{rows[1].ID, rows[2].ID})
	c.eqIDs("RescueExpired of qb again", pass([]string{"qb"}), nil)
	c.eqIDs("RescueExpired of every queue", pass(nil), []int64{rows[0].ID, rows[3].ID})
	for _, r := range rows {
		if got := c.get(r.ID); got.State != leasehold.StatePending {
			c.Errorf("job %d (queue %s) = %s after the passes; want pending", r.ID, r.Queue, got.State)
		}
	}
}

// checkRescued checks job held (as it was before expiring) after a rescue
// to state want between before and after, column by column: the lease
// cleared, finished_at set for a terminal state, run_at kept, last_error
// naming the expired owner, every other column as it was.
func (c *tc) checkRescued(held *leasehold.JobRow, want leasehold.JobState, before, after time.Time) {
	c.Helper()
	j := c.get(held.ID)
	what := func(f string) string { return fmt.Sprintf("job %d rescued to %s: %s", held.ID, want, f) }
	// w keeps held's run_at: a rescued job keeps its place in line, ahead
	// of newer work.
	w := *held
	w.State, w.LeaseOwner, w.LeaseUntil = want, "", time.Time{}
	w.LastError = "lease expired (owner " + held.LeaseOwner + ")"
	if want.Finished() {
		c.timeIn(what("FinishedAt"), j.FinishedAt, before, after)
		w.FinishedAt = j.FinishedAt
	}
	c.sameJob(what("row"), j, &w)
	as := c.history(held.ID, held.LeaseOwner, leasehold.OutcomeLeaseExpired)
	if len(as) == 1 {
		c.timeIn(what("attempt EndedAt"), as[0].EndedAt, before, after)
		c.eq(what("attempt Error"), as[0].Error, j.LastError)
		c.sameTime(what("attempt HeartbeatAt (copied)"), as[0].HeartbeatAt, held.HeartbeatAt)
	}
}

// operateOnStuck checks that an operator can retry and cancel stuck jobs.
func (c *tc) operateOnStuck(retry, cancel int64) {
	c.Helper()
	if j, err := c.retry(c.ctx, retry); err != nil || j.State != leasehold.StatePending {
		c.Errorf("RetryJob(stuck) = %v, %v; want pending", j, err)
	}
	if j, err := c.d.CancelJob(c.ctx, cancel); err != nil || j.State != leasehold.StateCancelled || j.FinishedAt.IsZero() {
		c.Errorf("CancelJob(stuck) = %v, %v; want cancelled with FinishedAt", j, err)
	}
}

// testRescueConcurrent races 4 watchers (two per driver, Limit 3) over 24
// expired leases: each must be rescued exactly once, with one history row.
func testRescueConcurrent(c *tc) {
	const jobs, watchers, limit = 24, 4, 3
	held := c.expireAll("owner-x", c.insertN(jobs, "q", "k"))
	d2 := c.second()
	var (
		mu    sync.Mutex
		by    = map[int64]int{}
		wg    sync.WaitGroup
		start = make(chan struct{})
	)
	for i := range watchers {
		d := c.d
		if i%2 == 1 {
			d = d2
		}
		wg.Go(func() {
			<-start
			for {
				res, err := d.RescueExpired(c.ctx, &driver.RescueParams{Decide: statemachine.Rescuer(nil), Limit: limit})
				if err != nil {
					c.Errorf("watcher %d: RescueExpired: %v", i, err)
					return
				}
				if len(res) > limit {
					c.Errorf("watcher %d: RescueExpired with Limit %d returned %d", i, limit, len(res))
				}
				mu.Lock()
				for _, r := range res {
					if prev, ok := by[r.ID]; ok {
						c.Errorf("job %d rescued twice: by watchers %d and %d", r.ID, prev, i)
					}
					by[r.ID] = i
				}
				mu.Unlock()
				if len(res) == 0 {
					return
				}
			}
		})
	}
	close(start)
	wg.Wait()
	if len(by) != jobs {
		c.Errorf("%d of %d expired jobs rescued", len(by), jobs)
	}
	for _, j := range held {
		c.eq(fmt.Sprintf("job %d state", j.ID), c.get(j.ID).State, leasehold.StatePending)
		c.history(j.ID, "owner-x", leasehold.OutcomeLeaseExpired)
	}
}

func keys[V any](m map[int64]V) []int64 {
	out := make([]int64, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// testOwnLeasesLeft checks that a claim never takes over its own owner's
// expired leases, which another owner's claim does, and
// RescueParams.Held: a pass leaves alone the expired leases its Owner
// holds, and moves the Owner's others and those a pass naming another
// owner finds.
func testOwnLeasesLeft(c *tc) {
	rows := c.insert(job("qs", "k"), job("qs", "k"), job("qr", "k"), job("qr", "k"))
	c.expireAll("owner-s", rows)

	c.eqIDs("Claim by the expired leases' owner", ids(c.claim("qs", "owner-s", 10, true)), nil)
	for _, r := range rows[:2] {
		if got := c.get(r.ID); got.State != leasehold.StateProcessing || got.Attempt != 1 || got.LeaseOwner != "owner-s" {
			c.Errorf("job %d after its owner's claim = %s attempt %d owner %q; want its lease untouched",
				r.ID, got.State, got.Attempt, got.LeaseOwner)
		}
		c.history(r.ID, "owner-s", leasehold.Outcome("")) // still open
	}
	c.eqIDs("Claim by another owner", ids(c.claim("qs", "owner-t", 10, true)), []int64{rows[0].ID, rows[1].ID})

	decide := statemachine.Rescuer(nil)
	pass := func(owner string) []int64 {
		c.Helper()
		moved, err := c.d.RescueExpired(c.ctx, &driver.RescueParams{Decide: decide, Limit: 100,
			Queues: []string{"qr"}, Owner: owner, Held: []int64{rows[2].ID}})
		if err != nil {
			c.Fatalf("RescueExpired(owner %s): %v", owner, err)
		}
		return rescuedIDs(moved)
	}
	c.eqIDs("RescueExpired by the owner holding job 3", pass("owner-s"), []int64{rows[3].ID})
	c.eqIDs("RescueExpired naming another owner", pass("owner-t"), []int64{rows[2].ID})
}

// rescuedIDs returns the ids of rescued.
func rescuedIDs(rescued []*leasehold.RescuedJob) []int64 {
	out := make([]int64, 0, len(rescued))
	for _, r := range rescued {
		out = append(out, r.ID)
	}
	return out
}
