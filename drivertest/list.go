package drivertest

import (
	"fmt"
	"slices"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// list runs ListJobs.
func (c *tc) list(p *leasehold.ListParams) []*leasehold.JobRow {
	c.Helper()
	rows, err := c.d.ListJobs(c.ctx, p)
	if err != nil {
		c.Fatalf("ListJobs(%+v): %v", *p, err)
	}
	return rows
}

// testListJobs checks each ListJobs filter (states, queue, kind, owner,
// expired), their combination, the id order ascending and with Desc
// descending, AfterID and BeforeID paging and the default limit of 100.
func testListJobs(c *tc) {
	mk := func(queue, kind string) *driver.InsertParams { return job(queue, kind) }
	r := rawIDs(c.insert(mk("q1", "a"), mk("q1", "a"), mk("q1", "b"), mk("q2", "a"), mk("q1", "a"), mk("q2", "a"), mk("q1", "b")))
	c.claimID(c.d, r[4], "owner-A", liveTTL, false)
	expired := c.claimID(c.d, r[5], "owner-B", shortTTL, false)
	done := c.claimID(c.d, r[6], "owner-A", liveTTL, false)
	c.finish(fin(done, leasehold.OutcomeCompleted))
	c.waitExpired(expired)

	cases := []struct {
		p    leasehold.ListParams
		want []int64
	}{
		{leasehold.ListParams{}, sorted(r...)},
		{leasehold.ListParams{States: []leasehold.JobState{leasehold.StatePending}}, sorted(r[:4]...)},
		{leasehold.ListParams{States: []leasehold.JobState{leasehold.StateProcessing, leasehold.StateCompleted}}, sorted(r[4:]...)},
		{leasehold.ListParams{Queue: "q2"}, sorted(r[3], r[5])},
		{leasehold.ListParams{Kind: "b"}, sorted(r[2], r[6])},
		{leasehold.ListParams{Owner: "owner-A"}, sorted(r[4])},
		{leasehold.ListParams{Expired: true}, sorted(r[5])},
		{leasehold.ListParams{Queue: "q1", Kind: "a", States: []leasehold.JobState{leasehold.StatePending}}, sorted(r[:2]...)},
		{leasehold.ListParams{Queue: "q1", Kind: "a", States: []leasehold.JobState{leasehold.StateProcessing}, Owner: "owner-A"}, sorted(r[4])},
		{leasehold.ListParams{Limit: 2}, sorted(r...)[:2]},
		{leasehold.ListParams{Limit: 2, AfterID: sorted(r...)[1]}, sorted(r...)[2:4]},
		{leasehold.ListParams{AfterID: sorted(r...)[5]}, sorted(r...)[6:]},
		{leasehold.ListParams{Queue: "none"}, []int64{}},
		{leasehold.ListParams{Desc: true}, reversed(sorted(r...))},
		{leasehold.ListParams{Desc: true, Limit: 2}, reversed(sorted(r...))[:2]},
		{leasehold.ListParams{Desc: true, Limit: 2, BeforeID: sorted(r...)[5]}, reversed(sorted(r...)[3:5])},
		{leasehold.ListParams{Desc: true, Queue: "q1", Kind: "a"}, reversed(sorted(r[0], r[1], r[4]))},
		{leasehold.ListParams{BeforeID: sorted(r...)[2]}, sorted(r...)[:2]},
		{leasehold.ListParams{AfterID: sorted(r...)[1], BeforeID: sorted(r...)[4]}, sorted(r...)[2:4]},
	}
	for _, tcase := range cases {
		got := c.list(&tcase.p)
		gotIDs := rawIDs(got)
		if !slices.Equal(gotIDs, tcase.want) {
			c.Errorf("ListJobs(%+v) = %v, want %v (in id order, descending with Desc)", tcase.p, gotIDs, tcase.want)
		}
	}

	var many []*driver.InsertParams
	for i := range 120 {
		p := job("many", "k")
		p.Args = fmt.Appendf(nil, `{"i":%d}`, i)
		many = append(many, p)
	}
	if n, err := c.d.InsertBulk(c.ctx, many); err != nil || n != 120 {
		c.Fatalf("InsertBulk = %d, %v", n, err)
	}
	c.eq("ListJobs with Limit 0 (default 100): jobs", len(c.list(&leasehold.ListParams{Queue: "many"})), driver.DefaultListLimit)
}

// reversed returns a reversed copy of ids.
func reversed(ids []int64) []int64 {
	out := slices.Clone(ids)
	slices.Reverse(out)
	return out
}
