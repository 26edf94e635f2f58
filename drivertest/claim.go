package drivertest

import (
	"fmt"
	"sync"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/statemachine"
)

// testClaimAtomic races 8 claimers with distinct owners, half of them on a
// second driver (another pool or *sql.DB, as another process would), over
// 60 jobs: every job must be claimed exactly once, with attempt 1, by the
// owner the database records, with one attempt, running, in its history.
func testClaimAtomic(c *tc) {
	const jobs, racers, limit = 60, 8, 3
	c.insertN(jobs, "race", "k")
	d2 := c.second()
	var (
		mu    sync.Mutex
		owner = map[int64]string{}
		wg    sync.WaitGroup
		start = make(chan struct{})
	)
	for i := range racers {
		d, name := c.d, fmt.Sprintf("racer-%d", i)
		if i%2 == 1 {
			d = d2
		}
		wg.Go(func() {
			<-start
			for {
				rows, err := d.Claim(c.ctx, &driver.ClaimParams{
					Queue: "race", Kinds: []string{"k"}, Owner: name, TTL: liveTTL, Limit: limit,
				})
				if err != nil {
					c.Errorf("%s: Claim: %v", name, err)
					return
				}
				if len(rows) == 0 {
					return
				}
				if len(rows) > limit {
					c.Errorf("%s: Claim with Limit %d returned %d jobs", name, limit, len(rows))
				}
				mu.Lock()
				for _, j := range rows {
					if prev, ok := owner[j.ID]; ok {
						c.Errorf("job %d claimed twice: by %s and by %s", j.ID, prev, name)
					}
					owner[j.ID] = name
					if j.Attempt != 1 || j.LeaseOwner != name || j.State != leasehold.StateProcessing {
						c.Errorf("%s claimed job %d with attempt %d, owner %q, state %s; want 1, %q, processing",
							name, j.ID, j.Attempt, j.LeaseOwner, j.State, name)
					}
				}
				mu.Unlock()
			}
		})
	}
	close(start)
	wg.Wait()
	if len(owner) != jobs {
		c.Errorf("%d distinct jobs claimed, want all %d", len(owner), jobs)
	}
	for id, name := range owner {
		j := c.get(id)
		if j.LeaseOwner != name || j.Attempt != 1 || j.State != leasehold.StateProcessing {
			c.Errorf("job %d in database: owner %q attempt %d state %s; the claim returned it to %s with attempt 1",
				id, j.LeaseOwner, j.Attempt, j.State, name)
		}
		c.history(id, name, leasehold.OutcomeRunning)
	}
}

// testClaimByIDRace races 16 ClaimByID calls (half on a second driver) on
// one pending job: exactly one must win, the others get (nil, nil).
func testClaimByIDRace(c *tc) {
	j := c.insert(job("q", "k"))[0]
	winner := raceClaimByID(c, j.ID, false, 16)
	if winner == "" {
		return
	}
	got := c.get(j.ID)
	if got.LeaseOwner != winner || got.Attempt != 1 {
		c.Errorf("job owner %q attempt %d, want winner %q attempt 1", got.LeaseOwner, got.Attempt, winner)
	}
	c.history(j.ID, winner, leasehold.OutcomeRunning)
}

// raceClaimByID races n owners (half on a second driver) for job id and
// returns the single winner, reporting an error unless exactly one won.
// Where caller transactions lock single rows, the racers start while
// another transaction holds the job's row (holdRow), released unchanged
// once at least two of them queue behind it: they have then read the job
// as claimable, so a ClaimByID that does not lock the row before it
// re-checks it lets several of them win every time, not only when their
// statements happen to overlap.
func raceClaimByID(c *tc, id int64, takeOver bool, n int) string {
	c.Helper()
	d2 := c.second()
	hold := c.holdRow(id)
	var (
		mu      sync.Mutex
		winners []string
		wg      sync.WaitGroup
		start   = make(chan struct{})
	)
	for i := range n {
		d, name := c.d, fmt.Sprintf("racer-%d", i)
		if i%2 == 1 {
			d = d2
		}
		wg.Go(func() {
			<-start
			j, err := d.ClaimByID(c.ctx, &driver.ClaimByIDParams{ID: id, Owner: name, TTL: liveTTL, TakeOver: takeOver})
			if err != nil {
				c.Errorf("%s: ClaimByID: %v", name, err)
				return
			}
			if j != nil {
				mu.Lock()
				winners = append(winners, name)
				mu.Unlock()
			}
		})
	}
	close(start)
	if hold != nil {
		// Release the row even when the wait fails, so that the racers
		// end before the test does.
		queued := hold.waitQueued(c, minQueued)
		if err := hold.Release(); err != nil {
			c.Errorf("commit of the transaction holding job %d: %v", id, err)
		}
		if queued != nil {
			c.Errorf("racers for job %d: %v", id, queued)
		}
	}
	wg.Wait()
	if len(winners) != 1 {
		c.Errorf("%d racers won job %d (%v), want exactly 1", len(winners), id, winners)
		return ""
	}
	return winners[0]
}

// minQueued is how many racers raceClaimByID waits to see queued behind
// the held row: two that read the job claimable are enough for a claim
// without the row lock to let both win, and a driver's pool may let no
// more than a few of its racers reach the database at once.
const minQueued = 2

// holdRow locks job id's row with the harness's HoldRow, or returns nil
// when the harness has none (SQLite: its write transaction would hold
// back every claim instead, and serializes them anyway).
func (c *tc) holdRow(id int64) *RowHold {
	c.Helper()
	if c.h.HoldRow == nil {
		return nil
	}
	return c.h.HoldRow(c.T, c.d, id)
}

// waitQueued waits until at least n sessions queue behind h's lock, and
// returns an error if they do not within waitTimeout.
func (h *RowHold) waitQueued(c *tc, n int) error {
	c.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		queued, err := h.Queued(c.ctx)
		if err != nil {
			return fmt.Errorf("count the sessions queued behind the held row: %w", err)
		}
		if queued >= n {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%d queued behind the held row after %v, want at least %d", queued, waitTimeout, n)
		}
		select {
		case <-c.ctx.Done():
			return fmt.Errorf("waiting for %d queued behind the held row: %w", n, c.ctx.Err())
		case <-time.After(pollEvery):
		}
	}
}

// testClaimSetsLease checks the row a claim returns and persists: state
// processing, owner, attempt incremented, lease_until = db now + TTL, and
// each claim in the history as an attempt (running until it ends).
func testClaimSetsLease(c *tc) {
	const ttl = 90*time.Second + 250*time.Millisecond // sub-second part must survive
	p := job("q", "k")
	p.Args, p.Metadata = []byte(`{"a":1,"b":"x"}`), []byte(`{"m":true}`)
	p.Priority, p.MaxAttempts, p.UniqueKey = 7, 4, "claim-sets-lease"
	j := c.insert(p)[0]

	before := c.now()
	rows, err := c.d.Claim(c.ctx, &driver.ClaimParams{Queue: "q", Kinds: []string{"k"}, Owner: "owner-a", TTL: ttl, Limit: 10})
	after := c.now()
	if err != nil || len(rows) != 1 {
		c.Fatalf("Claim = %d rows, %v; want 1 row", len(rows), err)
	}
	want := *j
	want.State, want.Attempt, want.LeaseOwner, want.LeaseUntil = leasehold.StateProcessing, 1, "owner-a", rows[0].LeaseUntil
	c.sameJob("claimed row", rows[0], &want)
	c.timeIn("LeaseUntil", rows[0].LeaseUntil, before.Add(ttl), after.Add(ttl))
	c.sameJob("GetJob after claim (persisted)", c.get(j.ID), rows[0])
	as := c.history(j.ID, "owner-a", leasehold.OutcomeRunning)
	if len(as) == 1 {
		c.timeIn("attempt 1 ClaimedAt", as[0].ClaimedAt, before, after)
		c.zeroTime("attempt 1 HeartbeatAt", as[0].HeartbeatAt)
	}

	// A second claim (after a retry) increments and persists attempt 2.
	retried := statemachine.Ending{Outcome: leasehold.OutcomeRetried, Error: "e1"}
	c.eqIDs("Finish retried", c.finish(token(j.ID, "owner-a", 1, retried)), []int64{j.ID})
	j2 := c.claimID(c.d, j.ID, "owner-b", liveTTL, false)
	c.eq("second claim Attempt", j2.Attempt, 2)
	c.eq("GetJob Attempt after second claim", c.get(j.ID).Attempt, 2)
	c.history(j.ID, "owner-a", leasehold.OutcomeRetried, "owner-b", leasehold.OutcomeRunning)
}

// testClaimRespectsRunAt checks that a job is not claimed before its
// run_at (RunIn relative to the db clock, or absolute RunAt), by Claim or
// ClaimByID, and is claimed once the db clock passes it.
func testClaimRespectsRunAt(c *tc) {
	now := c.now()
	in := job("q", "k")
	in.RunIn = time.Hour
	at := job("q", "k")
	at.RunAt = now.Add(time.Hour)
	past := job("q", "k")
	past.RunAt = now.Add(-time.Minute)
	soon := job("q", "k")
	soon.RunIn = 300 * time.Millisecond
	rows := c.insert(in, at, past, soon)
	after := c.now()
	c.timeIn("RunAt of RunIn 1h", rows[0].RunAt, now.Add(time.Hour), after.Add(time.Hour))
	c.sameTime("RunAt of absolute RunAt", rows[1].RunAt, at.RunAt)
	c.sameTime("RunAt of past RunAt", rows[2].RunAt, past.RunAt)
	c.timeIn("RunAt of RunIn 300ms", rows[3].RunAt, now.Add(soon.RunIn), after.Add(soon.RunIn))

	got := c.claim("q", "w", 10, true)
	claimedAt := c.now()
	for _, j := range got {
		switch {
		case j.ID == rows[0].ID || j.ID == rows[1].ID:
			c.Errorf("job %d with run_at in an hour was claimed", j.ID)
		case j.ID == rows[3].ID && claimedAt.Before(rows[3].RunAt):
			c.Errorf("job %d claimed before its run_at %v (db now after claim %v)", j.ID, rows[3].RunAt, claimedAt)
		}
	}
	if !containsID(got, rows[2].ID) {
		c.Errorf("job %d with run_at in the past not claimed", rows[2].ID)
	}
	for _, r := range rows[:2] {
		s := c.snap(r.ID)
		if j, err := c.d.ClaimByID(c.ctx, &driver.ClaimByIDParams{ID: r.ID, Owner: "w", TTL: liveTTL, TakeOver: true}); err != nil || j != nil {
			c.Errorf("ClaimByID of a scheduled job = %v, %v; want nil, nil", j, err)
		}
		c.unchanged("ClaimByID of a scheduled job", s)
	}
	if !containsID(got, rows[3].ID) {
		c.waitPast(rows[3].RunAt)
		if got := c.claim("q", "w", 10, true); !containsID(got, rows[3].ID) || len(got) != 1 {
			c.Errorf("after run_at passed, Claim = %v, want only job %d", ids(got), rows[3].ID)
		}
	}
}

func containsID(rows []*leasehold.JobRow, id int64) bool {
	for _, j := range rows {
		if j.ID == id {
			return true
		}
	}
	return false
}
