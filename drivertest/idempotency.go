package drivertest

import (
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// checkUUID reports an error unless j.UUID is a canonical RFC 4122
// version 4 UUID and j.IdempotencyKey is "leasehold-" followed by it.
func (c *tc) checkUUID(what string, j *leasehold.JobRow) {
	c.Helper()
	u, err := uuid.Parse(j.UUID)
	switch {
	case err != nil:
		c.Errorf("%s: job %d UUID %q: %v", what, j.ID, j.UUID, err)
	case u.Version() != 4 || u.Variant() != uuid.RFC4122 || u.String() != j.UUID:
		c.Errorf("%s: job %d UUID %q is not a canonical version 4 UUID", what, j.ID, j.UUID)
	case j.IdempotencyKey() != "leasehold-"+j.UUID:
		c.Errorf("%s: job %d IdempotencyKey %q, want leasehold-%s", what, j.ID, j.IdempotencyKey(), j.UUID)
	}
}

// testUUIDPerJob checks that every insert path stores a distinct random
// UUID per job (the one given in InsertParams when set), that a duplicate
// insert returns the existing job's UUID, and that the UUID and the
// idempotency key stay the same across attempts.
func testUUIDPerJob(c *tc) {
	given := job("q", "k")
	given.UUID = "7C5B0F4E-3A1D-4B8E-9F2A-6D4C3B2A1E0F"
	keyed := job("q", "k")
	keyed.UniqueKey = "u"
	rows := c.insert(job("q", "k"), given, keyed)
	c.eq("UUID of a job inserted with one (canonical form)", rows[1].UUID, strings.ToLower(given.UUID))
	if _, err := c.d.Insert(c.ctx, nil, []*driver.InsertParams{{Kind: "k", Queue: "q", Args: []byte(`{}`),
		MaxAttempts: 1, UUID: "not-a-uuid"}}); err == nil {
		c.Errorf("Insert with UUID %q succeeded, want an error", "not-a-uuid")
	}
	for _, tk := range c.h.TxKinds {
		tx, commit, _ := tk.Begin(c.T, c.d)
		res, err := c.d.Insert(c.ctx, tx, []*driver.InsertParams{job("q", "k")})
		if err != nil || len(res) != 1 {
			c.Fatalf("Insert in %s = %v, %v", tk.Name, res, err)
		}
		if err := commit(); err != nil {
			c.Fatalf("commit %s: %v", tk.Name, err)
		}
		rows = append(rows, res[0].Job)
	}
	bulk := []*driver.InsertParams{job("bulk", "k"), job("bulk", "k"), job("bulk", "k")}
	bulk[2].UniqueKey = "b" // PostgreSQL: INSERT instead of COPY
	if n, err := c.d.InsertBulk(c.ctx, bulk); err != nil || n != 3 {
		c.Fatalf("InsertBulk = %d, %v; want 3", n, err)
	}
	if n, err := c.d.InsertBulk(c.ctx, bulk[:2]); err != nil || n != 2 { // COPY on PostgreSQL
		c.Fatalf("InsertBulk without unique keys = %d, %v; want 2", n, err)
	}
	rows = append(rows, c.list(&leasehold.ListParams{Queue: "bulk"})...)
	seen := map[string]int64{}
	for _, j := range rows {
		c.checkUUID("inserted job", j)
		if other, dup := seen[j.UUID]; dup {
			c.Errorf("jobs %d and %d share UUID %s", other, j.ID, j.UUID)
		}
		seen[j.UUID] = j.ID
		c.eq("UUID read back by GetJob", c.get(j.ID).UUID, j.UUID)
	}

	again := job("q", "k")
	again.UniqueKey = "u"
	res, err := c.d.Insert(c.ctx, nil, []*driver.InsertParams{again})
	if err != nil || len(res) != 1 || !res[0].Duplicate {
		c.Fatalf("duplicate Insert = %v, %v; want the existing job", res, err)
	}
	c.eq("UUID of a duplicate insert (the existing job's)", res[0].Job.UUID, rows[2].UUID)

	j := rows[0]
	first := c.claimID(c.d, j.ID, "w1", liveTTL, false)
	c.finish(fin(first, leasehold.OutcomeRetried))
	second := c.claimID(c.d, j.ID, "w2", liveTTL, false)
	c.finish(fin(second, leasehold.OutcomeReleased))
	third := c.claimID(c.d, j.ID, "w3", liveTTL, false)
	for _, a := range []*leasehold.JobRow{first, second, third, c.get(j.ID)} {
		c.eq(fmt.Sprintf("idempotency key of attempt %d", a.Attempt), a.IdempotencyKey(), j.IdempotencyKey())
	}
}

// testIdempotencyKeyNotReusedWithID checks that a job given the id of a
// lost job (the id sequence restarted, as after an asynchronous failover)
// gets a new idempotency key.
func testIdempotencyKeyNotReusedWithID(c *tc) {
	if c.h.ResetIDs == nil {
		c.Skip("harness has no ResetIDs")
	}
	lost := c.insert(job("q", "payment.charge"))[0]
	if _, err := c.d.CancelJob(c.ctx, lost.ID); err != nil {
		c.Fatalf("CancelJob: %v", err)
	}
	if n := c.purge(-time.Second, 0); n != 1 {
		c.Fatalf("Purge deleted %d jobs, want the lost one", n)
	}
	c.h.ResetIDs(c.T, c.d)
	reissued := c.insert(job("q", "payment.charge"))[0]
	if reissued.ID != lost.ID {
		c.Fatalf("after ResetIDs the new job got id %d, want the lost job's id %d", reissued.ID, lost.ID)
	}
	c.checkUUID("job with a reissued id", reissued)
	if reissued.IdempotencyKey() == lost.IdempotencyKey() {
		c.Errorf("job %d reissued the lost job's id and got its idempotency key %q; want a new key",
			reissued.ID, lost.IdempotencyKey())
	}
}
