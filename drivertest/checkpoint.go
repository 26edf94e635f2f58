package drivertest

import (
	"errors"
	"fmt"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/statemachine"
)

// checkpoint records checkpoint name of lease f with data, in tx (nil: on
// its own).
func (c *tc) checkpoint(tx any, f *driver.FenceParams, name, data string) (*leasehold.CheckpointRow, error) {
	return c.d.Checkpoint(c.ctx, tx, &driver.CheckpointParams{Lease: *f, Name: name, Data: []byte(data)})
}

// checkpoints returns the checkpoints of job id.
func (c *tc) checkpoints(id int64) []*leasehold.CheckpointRow {
	c.Helper()
	cs, err := c.d.Checkpoints(c.ctx, id)
	if err != nil {
		c.Fatalf("Checkpoints(%d): %v", id, err)
	}
	return cs
}

// fmtCheckpoints lists cs as attempt:name=data.
func fmtCheckpoints(cs []*leasehold.CheckpointRow) string {
	s := ""
	for _, cp := range cs {
		s += fmt.Sprintf(" %d:%s=%s", cp.Attempt, cp.Name, cp.Data)
	}
	return "[" + s + " ]"
}

// testCheckpoints: a checkpoint written under a held lease is recorded
// with its job, attempt, name, data and the database clock's time, in
// order; in a caller's transaction it commits or rolls back with it; one
// written by a lost lease (wrong owner, expired, taken over) is refused
// with ErrLeaseLost and recorded nowhere, while the new owner's are; the
// reader returns every attempt's.
func testCheckpoints(c *tc) {
	j := c.claimID(c.d, c.insert(job("q", "k"))[0].ID, "w", liveTTL, false)
	before := c.now()
	first, err := c.checkpoint(nil, fenceOf(j, "w"), "charge-sent", `{"key": "K"}`)
	after := c.now()
	if err != nil {
		c.Fatalf("Checkpoint: %v", err)
	}
	c.eq("checkpoint job", first.JobID, j.ID)
	c.eq("checkpoint attempt", first.Attempt, j.Attempt)
	c.eq("checkpoint name", first.Name, "charge-sent")
	if !sameJSON(first.Data, []byte(`{"key":"K"}`)) {
		c.Errorf("checkpoint data %s, want {\"key\":\"K\"}", first.Data)
	}
	c.timeIn("checkpoint WrittenAt", first.WrittenAt, before, after)
	for _, k := range c.h.TxKinds {
		tx, _, rollback := k.Begin(c.T, c.d)
		if _, err := c.checkpoint(tx, fenceOf(j, "w"), "rolled-back", `1`); err != nil {
			c.Fatalf("Checkpoint in %s: %v", k.Name, err)
		}
		if err := rollback(); err != nil {
			c.Fatalf("rollback: %v", err)
		}
		tx, commit, _ := k.Begin(c.T, c.d)
		if _, err := c.checkpoint(tx, fenceOf(j, "w"), "in-"+k.Name, `"answered"`); err != nil {
			c.Fatalf("Checkpoint in %s: %v", k.Name, err)
		}
		if err := commit(); err != nil {
			c.Fatalf("commit: %v", err)
		}
	}
	if _, err := c.checkpoint(nil, fenceOf(j, "other"), "forged", `{}`); !errors.Is(err, leasehold.ErrLeaseLost) {
		c.Errorf("Checkpoint with a wrong owner = %v, want ErrLeaseLost", err)
	}
	cs := c.checkpoints(j.ID)
	if len(cs) != 1+len(c.h.TxKinds) {
		c.Fatalf("checkpoints recorded: %s, want charge-sent then one per committed tx (%d)",
			fmtCheckpoints(cs), 1+len(c.h.TxKinds))
	}
	for i := 1; i < len(cs); i++ {
		if cs[i].Seq <= cs[i-1].Seq || cs[i].Name != "in-"+c.h.TxKinds[i-1].Name {
			c.Errorf("checkpoints %s, want charge-sent then one per committed tx, in order", fmtCheckpoints(cs))
		}
	}
	c.checkLostLeaseCheckpoint()
}

// checkLostLeaseCheckpoint: a lease that expired may no longer write
// checkpoints, before and after a takeover; the new owner may, and a
// later reader sees both attempts' checkpoints, not the refused ones.
func (c *tc) checkLostLeaseCheckpoint() {
	c.Helper()
	j := c.claimID(c.d, c.insert(job("q", "k"))[0].ID, "w", shortTTL, false)
	if _, err := c.checkpoint(nil, fenceOf(j, "w"), "about-to-charge", `{}`); err != nil {
		// The lease may already be over on a slow machine: that is the
		// refusal the rest checks, not a failure.
		if !errors.Is(err, leasehold.ErrLeaseLost) {
			c.Fatalf("Checkpoint: %v", err)
		}
	}
	c.waitExpired(j)
	if _, err := c.checkpoint(nil, fenceOf(j, "w"), "late", `{}`); !errors.Is(err, leasehold.ErrLeaseLost) {
		c.Errorf("Checkpoint of an expired lease = %v, want ErrLeaseLost", err)
	}
	next := c.claimID(c.d, j.ID, "thief", liveTTL, true)
	if _, err := c.checkpoint(nil, fenceOf(j, "w"), "later", `{}`); !errors.Is(err, leasehold.ErrLeaseLost) {
		c.Errorf("Checkpoint after a takeover = %v, want ErrLeaseLost", err)
	}
	if _, err := c.checkpoint(nil, fenceOf(next, "thief"), "provider-answered", `{"charged": true}`); err != nil {
		c.Fatalf("Checkpoint of the new owner: %v", err)
	}
	for _, cp := range c.checkpoints(j.ID) {
		if cp.Name == "late" || cp.Name == "later" {
			c.Errorf("a refused checkpoint was recorded: %s", fmtCheckpoints(c.checkpoints(j.ID)))
		}
	}
	last := c.checkpoints(j.ID)
	if n := len(last); n == 0 || last[n-1].Attempt != next.Attempt || last[n-1].Name != "provider-answered" {
		c.Errorf("checkpoints %s, want the new owner's last", fmtCheckpoints(last))
	}
}

// testCheckpointsDeleted: DeleteJob and Purge delete a job's checkpoints
// with it, and nobody else's.
func testCheckpointsDeleted(c *tc) {
	var jobs []*leasehold.JobRow
	for range 3 {
		j := c.claimID(c.d, c.insert(job("q", "k"))[0].ID, "w", liveTTL, false)
		if _, err := c.checkpoint(nil, fenceOf(j, "w"), "step", `{}`); err != nil {
			c.Fatalf("Checkpoint: %v", err)
		}
		jobs = append(jobs, j)
	}
	for _, j := range jobs[:2] {
		c.finish(token(j.ID, "w", j.Attempt, statemachine.Ending{Outcome: leasehold.OutcomeCompleted}))
	}
	if _, err := c.d.DeleteJob(c.ctx, jobs[0].ID); err != nil {
		c.Fatalf("DeleteJob: %v", err)
	}
	c.eq("checkpoints of a deleted job", len(c.checkpoints(jobs[0].ID)), 0)
	c.waitPast(c.get(jobs[1].ID).FinishedAt.Add(time.Millisecond))
	if n, err := c.d.Purge(c.ctx, &driver.PurgeParams{}); err != nil || n != 1 {
		c.Fatalf("Purge = %d, %v; want 1", n, err)
	}
	c.eq("checkpoints of a purged job", len(c.checkpoints(jobs[1].ID)), 0)
	c.eq("checkpoints of a running job", len(c.checkpoints(jobs[2].ID)), 1)
}
