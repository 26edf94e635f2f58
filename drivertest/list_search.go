package drivertest

import (
	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// testListJobsSearch: ListParams.Search selects the jobs with a string
// value, at any depth of their args or metadata, that contains it, ASCII
// letters in any case, every other character exactly, with no wildcards;
// keys and numbers are not searched; it combines with the other filters,
// Desc and Limit.
func testListJobsSearch(c *tc) {
	mk := func(queue, args, meta string) *driver.InsertParams {
		p := job(queue, "k")
		p.Args, p.Metadata = []byte(args), []byte(meta)
		return p
	}
	r := rawIDs(c.insert(
		mk("q1", `{"to":"Ada@Example.COM"}`, ``),
		mk("q1", `{"n":1}`, `{"tenant":"ACME corp"}`),
		mk("q2", `{"a":{"b":["x","a Needle here"]}}`, ``),
		mk("q1", `{"needle":12345,"ok":true}`, ``),
		mk("q1", `{"name":"Ünïcode"}`, ``),
		mk("q2", `{"s":"say \"hi\"\n"}`, ``),
		mk("q1", `{"s":"100%_off"}`, ``),
		mk("q2", `{"to":"ada@example.com"}`, `{"note":"again"}`),
		mk("q3", `{"u":"\u0058yZ caf\u00e9"}`, ``),
	))
	cases := []struct {
		p    leasehold.ListParams
		want []int64
	}{
		{leasehold.ListParams{Search: "example.com"}, []int64{r[0], r[7]}},
		{leasehold.ListParams{Search: "ADA@example"}, []int64{r[0], r[7]}},
		{leasehold.ListParams{Search: "acme"}, []int64{r[1]}},
		{leasehold.ListParams{Search: "needle"}, []int64{r[2]}},
		{leasehold.ListParams{Search: "123"}, nil},
		{leasehold.ListParams{Search: "true"}, nil},
		{leasehold.ListParams{Search: "Ünï"}, []int64{r[4]}},
		{leasehold.ListParams{Search: "ünï"}, nil},
		{leasehold.ListParams{Search: `"hi"` + "\n"}, []int64{r[5]}},
		{leasehold.ListParams{Search: "%_"}, []int64{r[6]}},
		{leasehold.ListParams{Search: "_"}, []int64{r[6]}},
		{leasehold.ListParams{Search: "%"}, []int64{r[6]}},
		{leasehold.ListParams{Search: "no such text"}, nil},
		{leasehold.ListParams{Search: "xyz café"}, []int64{r[8]}},
		{leasehold.ListParams{Search: "example", Queue: "q2"}, []int64{r[7]}},
		{leasehold.ListParams{Search: "a", Desc: true, Limit: 2}, []int64{r[8], r[7]}},
	}
	for _, tt := range cases {
		got, err := c.d.ListJobs(c.ctx, &tt.p)
		if err != nil {
			c.Fatalf("ListJobs(%+v): %v", tt.p, err)
		}
		c.eq("ListJobs ids with search "+tt.p.Search, rawIDs(got), orEmpty(tt.want))
	}
}

// orEmpty returns ids, or an empty slice for nil.
func orEmpty(ids []int64) []int64 {
	if ids == nil {
		return []int64{}
	}
	return ids
}
