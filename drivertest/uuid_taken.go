package drivertest

import (
	"errors"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// takenUUID is the UUID testUUIDTaken gives twice; keyedUUID is a keyed
// job's, inserted twice with its key.
const (
	takenUUID = "0b6f2c1e-8d4a-4f3b-9e5c-7a1d2b3c4e5f"
	keyedUUID = "3d9a7e52-1c4b-4a6f-8e2d-5b7c9a1f3e60"
)

// testUUIDTaken checks that no insert path gives a job a UUID another job
// holds (invariant 11 when InsertParams.UUID is set by hand): Insert,
// without and in each caller transaction, refuses the batch with an error
// wrapping leasehold.ErrInvalidArgs; InsertBulk, with COPY or INSERT on
// PostgreSQL, fails or leaves the job out of its count; the UUID names
// one job throughout; a keyed job inserted again with its own UUID is a
// duplicate, whose key decides. Once its holder is deleted (DeleteJob, or Purge),
// the UUID can be given again.
func testUUIDTaken(c *tc) {
	holder := c.insert(withUUID(job("q", "k")))[0]
	_, err := c.d.Insert(c.ctx, nil, []*driver.InsertParams{job("q", "k"), withUUID(job("q", "k"))})
	c.uuidRefused("Insert", err)
	for _, tk := range c.h.TxKinds {
		tx, _, rollback := tk.Begin(c.T, c.d)
		_, err := c.d.Insert(c.ctx, tx, []*driver.InsertParams{withUUID(job("q", "k"))})
		c.uuidRefused("Insert in "+tk.Name, err)
		_ = rollback()
	}
	keyed := withUUID(job("q", "k"))
	keyed.UniqueKey = "fresh"
	var bulked int64
	for _, bulk := range [][]*driver.InsertParams{
		{job("bulk", "k"), withUUID(job("bulk", "k"))}, // COPY on PostgreSQL
		{job("bulk", "k"), keyed},                      // INSERT on PostgreSQL
	} {
		n, err := c.d.InsertBulk(c.ctx, bulk)
		if err == nil && n > 1 {
			c.Errorf("InsertBulk of a job with a taken UUID = %d jobs, nil; want an error or 1 job", n)
		}
		bulked += n
	}
	c.eq("jobs with the UUID", c.holdersOf(takenUUID), 1)
	c.eq("job holding the UUID", c.get(holder.ID).UUID, takenUUID)
	c.eq("jobs InsertBulk counted, listed", bulked, int64(len(c.list(&leasehold.ListParams{Queue: "bulk"}))))

	// The same keyed job inserted again, UUID and all (a retried insert):
	// its key is held, so it is a duplicate, not a taken UUID.
	first := job("q", "k")
	first.UUID, first.UniqueKey = keyedUUID, "held"
	kept := c.insert(first)[0]
	res, err := c.d.Insert(c.ctx, nil, []*driver.InsertParams{first})
	if err != nil || len(res) != 1 || !res[0].Duplicate || res[0].Job.ID != kept.ID {
		c.Errorf("Insert of a keyed job again with its UUID = %+v, %v; want a duplicate of job %d", res, err, kept.ID)
	}

	c.finish(fin(c.claimID(c.d, holder.ID, "w", liveTTL, false), leasehold.OutcomeCompleted))
	if _, err := c.d.DeleteJob(c.ctx, holder.ID); err != nil {
		c.Fatalf("DeleteJob: %v", err)
	}
	again := c.insert(withUUID(job("q", "k")))[0]
	c.eq("UUID of a job given the UUID of a deleted job", again.UUID, takenUUID)
	if _, err := c.d.CancelJob(c.ctx, again.ID); err != nil {
		c.Fatalf("CancelJob: %v", err)
	}
	if n := c.purge(-time.Second, 0); n < 1 {
		c.Fatalf("Purge deleted %d jobs, want the cancelled one", n)
	}
	c.eq("UUID of a job given the UUID of a purged job", c.insert(withUUID(job("q", "k")))[0].UUID, takenUUID)
}

// withUUID sets p's UUID to takenUUID and returns p.
func withUUID(p *driver.InsertParams) *driver.InsertParams {
	p.UUID = takenUUID
	return p
}

// uuidRefused reports an error unless err is an insert's refusal of a
// taken UUID.
func (c *tc) uuidRefused(what string, err error) {
	c.Helper()
	if !errors.Is(err, leasehold.ErrInvalidArgs) {
		c.Errorf("%s of a job with a taken UUID: %v; want an error wrapping ErrInvalidArgs", what, err)
	}
}

// holdersOf counts the jobs whose UUID is u.
func (c *tc) holdersOf(u string) int {
	n := 0
	for _, j := range c.list(&leasehold.ListParams{}) {
		if j.UUID == u {
			n++
		}
	}
	return n
}
