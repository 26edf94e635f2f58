package drivertest

import (
	"fmt"
	"sync"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// testInsertFields checks the rows Insert returns and stores: results in
// params order, pending, attempt 0, created_at and run_at from the db
// clock (or the absolute RunAt), metadata {} when nil.
func testInsertFields(c *tc) {
	p1 := job("qa", "kind-a")
	p1.Args, p1.Priority, p1.MaxAttempts = []byte(`{"s":"é","n":[1,2]}`), -3, 5
	p2 := job("qb", "kind-b")
	p2.Metadata, p2.UniqueKey = []byte(`{"trace":"abc"}`), "u-1"
	p2.RunAt = c.now().Add(time.Hour)
	before := c.now()
	rows := c.insert(p1, p2)
	after := c.now()
	for i, p := range []*driver.InsertParams{p1, p2} {
		meta := p.Metadata
		if meta == nil {
			meta = []byte(`{}`)
		}
		want := leasehold.JobRow{
			ID: rows[i].ID, Kind: p.Kind, Queue: p.Queue, State: leasehold.StatePending, Priority: p.Priority,
			MaxAttempts: p.MaxAttempts, Args: p.Args, Metadata: meta, UniqueKey: p.UniqueKey,
			RunAt: rows[i].RunAt, CreatedAt: rows[i].CreatedAt, UUID: rows[i].UUID,
		}
		c.checkUUID(fmt.Sprintf("Insert result %d", i), rows[i])
		c.sameJob(fmt.Sprintf("Insert result %d", i), rows[i], &want)
		c.sameJob(fmt.Sprintf("GetJob of insert %d", i), c.get(rows[i].ID), rows[i])
		c.timeIn(fmt.Sprintf("insert %d CreatedAt", i), rows[i].CreatedAt, before, after)
	}
	if rows[0].ID == rows[1].ID {
		c.Errorf("two inserts got the same id %d", rows[0].ID)
	}
	c.timeIn("RunAt with neither RunAt nor RunIn", rows[0].RunAt, before, after)
	c.sameTime("RunAt with an absolute RunAt", rows[1].RunAt, p2.RunAt)
}

// testUniqueKey checks that inserting an existing unique key of the same
// kind returns the existing job with Duplicate set and inserts no second
// row, also within one batch and from another queue; the same key of
// another kind is another job.
func testUniqueKey(c *tc) {
	first := job("q", "k")
	first.UniqueKey, first.Args = "k1", []byte(`{"v":"first"}`)
	orig := c.insert(first)[0]

	again := job("q", "k")
	again.UniqueKey, again.Args = "k1", []byte(`{"v":"second"}`)
	k2, k3a, k3b := job("q", "k"), job("q", "k"), job("q", "k")
	k2.UniqueKey, k3a.UniqueKey, k3b.UniqueKey = "k2", "k3", "k3"
	res, err := c.d.Insert(c.ctx, nil, []*driver.InsertParams{k2, again, job("q", "k"), k3a, k3b})
	if err != nil || len(res) != 5 {
		c.Fatalf("Insert = %d results, %v; want 5", len(res), err)
	}
	wantDup := []bool{false, true, false, false, true}
	for i, r := range res {
		if r.Job == nil || r.Duplicate != wantDup[i] {
			c.Errorf("Insert result %d: job %v duplicate %v, want duplicate %v", i, r.Job, r.Duplicate, wantDup[i])
		}
	}
	if res[1].Job != nil {
		c.sameJob("duplicate result (the existing job)", res[1].Job, orig)
	}
	if res[3].Job != nil && res[4].Job != nil && res[3].Job.ID != res[4].Job.ID {
		c.Errorf("same key twice in one batch: ids %d and %d, want the same job", res[3].Job.ID, res[4].Job.ID)
	}
	c.eq("jobs stored (k1, k2, no key, k3)", len(c.list(&leasehold.ListParams{Queue: "q"})), 4)
	c.sameJob("existing job after a duplicate insert", c.get(orig.ID), orig)
	testUniqueKeyScope(c, orig)
}

// testUniqueKeyScope checks what a unique key spans, given orig, a job of
// kind "k" in queue "q" with key "k1": the same kind in any queue and any
// state is a duplicate; another kind is another job, also in one batch.
func testUniqueKeyScope(c *tc, orig *leasehold.JobRow) {
	otherQueue := job("other-q", "k")
	otherQueue.UniqueKey = "k1"
	otherKind := job("q", "sleep")
	otherKind.UniqueKey = "k1"
	res, err := c.d.Insert(c.ctx, nil, []*driver.InsertParams{otherQueue, otherKind})
	if err != nil || len(res) != 2 {
		c.Fatalf("Insert of key k1 in another queue and of another kind = %v, %v; want 2 results", res, err)
	}
	if !res[0].Duplicate || res[0].Job == nil || res[0].Job.ID != orig.ID {
		c.Errorf("same kind and key, other queue: %+v, want the existing job %d as a duplicate", res[0], orig.ID)
	}
	if res[1].Duplicate || res[1].Job == nil || res[1].Job.Kind != "sleep" || res[1].Job.ID == orig.ID {
		c.Errorf("same key, other kind: %+v, want a new job of kind sleep", res[1])
	}
	c.finish(fin(c.claimID(c.d, orig.ID, "w", liveTTL, false), leasehold.OutcomeCompleted))
	pair := []*driver.InsertParams{job("q2", "k"), job("q2", "charge")}
	pair[0].UniqueKey, pair[1].UniqueKey = "k1", "k1"
	res, err = c.d.Insert(c.ctx, nil, pair)
	if err != nil || len(res) != 2 {
		c.Fatalf("Insert of key k1 for kinds k and charge = %v, %v; want 2 results", res, err)
	}
	if !res[0].Duplicate || res[0].Job == nil || res[0].Job.ID != orig.ID || res[0].Job.State != leasehold.StateCompleted {
		c.Errorf("key of a completed job, same kind: %+v, want the completed job %d as a duplicate", res[0], orig.ID)
	}
	if res[1].Duplicate || res[1].Job == nil || res[1].Job.Kind != "charge" {
		c.Errorf("same key, third kind, in one batch: %+v, want a new job of kind charge", res[1])
	}
	if n, err := c.d.InsertBulk(c.ctx, pair); err != nil || n != 0 {
		c.Errorf("InsertBulk of existing (kind, key) pairs = %d, %v; want 0", n, err)
	}
	bulk := job("q", "bulk-kind")
	bulk.UniqueKey = "k1"
	if n, err := c.d.InsertBulk(c.ctx, []*driver.InsertParams{bulk}); err != nil || n != 1 {
		c.Errorf("InsertBulk of key k1 for a new kind = %d, %v; want 1", n, err)
	}
}

// testUniqueKeyRace races 8 inserts of one unique key for two kinds (half
// on a second driver, in two queues): exactly one inserts per kind, all of
// a kind get the same job, no error.
func testUniqueKeyRace(c *tc) {
	d2 := c.second()
	var (
		mu    sync.Mutex
		fresh = map[string]int{}
		idset = map[string]map[int64]bool{"k": {}, "k2": {}}
		wg    sync.WaitGroup
		start = make(chan struct{})
	)
	for i := range 8 {
		d := c.d
		if i%2 == 1 {
			d = d2
		}
		kind, queue := "k", "q"
		if i%4 >= 2 {
			kind = "k2"
		}
		if i >= 4 {
			queue = "q2"
		}
		wg.Go(func() {
			<-start
			p := job(queue, kind)
			p.UniqueKey = "race"
			res, err := d.Insert(c.ctx, nil, []*driver.InsertParams{p})
			if err != nil || len(res) != 1 || res[0].Job == nil {
				c.Errorf("inserter %d: Insert = %v, %v; want one result", i, res, err)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			idset[kind][res[0].Job.ID] = true
			if !res[0].Duplicate {
				fresh[kind]++
			}
		})
	}
	close(start)
	wg.Wait()
	for kind, ids := range idset {
		if fresh[kind] != 1 || len(ids) != 1 {
			c.Errorf("racing inserts of one key of kind %s: %d not duplicate, ids %v; want exactly 1 and one id",
				kind, fresh[kind], keys(ids))
		}
	}
	c.eq("jobs stored (one per kind)", len(c.list(&leasehold.ListParams{})), 2)
}

// testInsertBulk checks that InsertBulk inserts N claimable jobs with their
// fields, and skips existing unique keys.
func testInsertBulk(c *tc) {
	const n = 200
	ps := make([]*driver.InsertParams, n)
	for i := range ps {
		ps[i] = job("bulk", "k")
		ps[i].Args, ps[i].Priority, ps[i].MaxAttempts = fmt.Appendf(nil, `{"i":%d}`, i), i%3, 4
	}
	got, err := c.d.InsertBulk(c.ctx, ps)
	if err != nil || got != n {
		c.Fatalf("InsertBulk of %d = %d, %v", n, got, err)
	}
	rows := c.list(&leasehold.ListParams{Queue: "bulk", Limit: 1000})
	if len(rows) != n {
		c.Fatalf("ListJobs after InsertBulk: %d jobs, want %d", len(rows), n)
	}
	seen := map[string]bool{}
	for _, j := range rows {
		seen[string(j.Args)] = true
		if j.State != leasehold.StatePending || j.Kind != "k" || j.MaxAttempts != 4 || !sameJSON(j.Metadata, []byte(`{}`)) {
			c.Errorf("bulk job %d: state %s kind %s max_attempts %d metadata %s", j.ID, j.State, j.Kind, j.MaxAttempts, j.Metadata)
		}
	}
	c.eq("distinct args among bulk jobs", len(seen), n)
	if claimed := c.claim("bulk", "w", 1000, false); len(claimed) != n {
		c.Errorf("Claim after InsertBulk: %d jobs, want %d", len(claimed), n)
	}

	k := job("uq", "k")
	k.UniqueKey, k.Args = "b-1", []byte(`{"v":"orig"}`)
	orig := c.insert(k)[0]
	var ups []*driver.InsertParams
	for i := 1; i <= 3; i++ {
		p := job("uq", "k")
		p.UniqueKey = fmt.Sprintf("b-%d", i)
		ups = append(ups, p)
	}
	if got, err := c.d.InsertBulk(c.ctx, ups); err != nil || got != 2 {
		c.Errorf("InsertBulk with one existing key of 3 = %d, %v; want 2, nil", got, err)
	}
	c.eq("jobs in queue uq", len(c.list(&leasehold.ListParams{Queue: "uq"})), 3)
	c.sameJob("existing job after InsertBulk duplicate", c.get(orig.ID), orig)
}
