package drivertest

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// testClaimableQueues: ClaimableQueues names, sorted, exactly the queues
// given whose Claim with the same kinds (and the queue's takeover flag)
// would lease a job now: a due pending job of a given kind, or an expired
// lease with budget left and no cancel request in a queue that takes over;
// never a paused queue, a queue with only future, other-kind, live-leased
// or finished jobs, or a queue it was not given. It answers the same
// through a lookup of each queue and, from driver.ClaimableScanMin queues,
// through a walk of the table's queues; and each answer agrees with Claim.
// An expired lease is no work for its own owner, whose claims never take
// it over.
func testClaimableQueues(c *tc) {
	queues := c.claimableFixture()
	want := []string{"due", "expired-takeover", "resumed"}
	for _, n := range []int{0, driver.ClaimableScanMin} {
		p := &driver.ClaimableParams{Queues: withFiller(queues, n), Kinds: []string{"k"}}
		c.eq(fmt.Sprintf("claimable queues of %d given (scan %v)", len(p.Queues), driver.ClaimableScan(p)),
			c.claimable(p), want)
		p.Owner = "dead"
		c.eq(fmt.Sprintf("claimable queues of %d given (scan %v), to the expired leases' owner", len(p.Queues), driver.ClaimableScan(p)),
			c.claimable(p), []string{"due", "resumed"})
	}
	own, err := c.d.Claim(c.ctx, &driver.ClaimParams{
		Queue: "expired-takeover", Kinds: []string{"k"}, Owner: "dead", TTL: liveTTL, Limit: 10, TakeOver: true,
	})
	if err != nil {
		c.Fatalf("Claim(expired-takeover) by its owner: %v", err)
	}
	c.eq("Claim of expired-takeover by its lease's owner leased a job", len(own) > 0, false)
	for _, p := range []*driver.ClaimableParams{{Queues: queues}, {Kinds: []string{"k"}}} {
		c.eq("claimable queues without kinds or queues", c.claimable(p), []string(nil))
	}
	for _, q := range slices.Sorted(maps.Keys(queues)) {
		got, err := c.d.Claim(c.ctx, &driver.ClaimParams{
			Queue: q, Kinds: []string{"k"}, Owner: "w2", TTL: liveTTL, Limit: 10, TakeOver: queues[q],
		})
		if err != nil {
			c.Fatalf("Claim(%s): %v", q, err)
		}
		c.eq("Claim of "+q+" leased a job", len(got) > 0, slices.Contains(want, q))
	}
	c.eq("claimable queues after claiming them", c.claimable(&driver.ClaimableParams{Queues: queues, Kinds: []string{"k"}}),
		[]string(nil))
}

// claimableFixture fills the database with one queue per case of
// testClaimableQueues and returns the queues to look at, each with
// whether its claims take over.
func (c *tc) claimableFixture() map[string]bool {
	future, other := job("future", "k"), job("other-kind", "x")
	future.RunIn = time.Hour
	exhausted := job("expired-exhausted", "k")
	exhausted.MaxAttempts = 1
	c.insert(job("due", "k"), future, other, job("paused", "k"), job("resumed", "k"), job("not-given", "k"))
	expired := c.insert(job("expired-takeover", "k"), job("expired-flagged", "k"), job("expired-cancelled", "k"), exhausted)
	live := c.insert(job("live", "k"))[0]
	done := c.insert(job("finished", "k"))[0]
	leases := make([]*leasehold.JobRow, len(expired))
	for i, j := range expired {
		leases[i] = c.claimID(c.d, j.ID, "dead", shortTTL, false)
	}
	c.claimID(c.d, live.ID, "w", liveTTL, false)
	c.finish(fin(c.claimID(c.d, done.ID, "w", liveTTL, false), leasehold.OutcomeCompleted))
	if _, err := c.d.CancelJob(c.ctx, expired[2].ID); err != nil {
		c.Fatalf("CancelJob: %v", err)
	}
	c.pause("paused")
	c.pause("resumed")
	c.resume("resumed")
	c.waitExpired(leases...)
	return map[string]bool{
		"due": false, "future": false, "other-kind": false, "paused": true, "resumed": false,
		"expired-takeover": true, "expired-flagged": false, "expired-cancelled": true,
		"expired-exhausted": true, "live": true, "finished": true, "empty": true,
	}
}

// withFiller returns queues plus n more queues that have no jobs.
func withFiller(queues map[string]bool, n int) map[string]bool {
	out := maps.Clone(queues)
	for i := range n {
		out[fmt.Sprintf("filler-%05d", i)] = i%2 == 0
	}
	return out
}

// claimable calls ClaimableQueues, failing the test on an error.
func (c *tc) claimable(p *driver.ClaimableParams) []string {
	c.Helper()
	got, err := c.d.ClaimableQueues(c.ctx, p)
	if err != nil {
		c.Fatalf("ClaimableQueues: %v", err)
	}
	return got
}
