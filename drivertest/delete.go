package drivertest

import (
	"errors"

	"github.com/leasehold/leasehold"
)

// testDeleteJob: DeleteJob deletes a completed, failed or cancelled job
// and its history, returning the job as it was, and leaves every other
// job and history alone; it refuses a processing job (ErrJobRunning) and
// a pending or stuck one (ErrJobNotFinished), changing nothing, and a
// missing or already deleted job is ErrJobNotFound.
func testDeleteJob(c *tc) {
	byState := map[leasehold.JobState]*leasehold.JobRow{}
	for _, s := range leasehold.AllStates {
		byState[s] = c.heartbeatedIn(s)
	}
	bystander := c.snap(byState[leasehold.StateProcessing].ID)
	for _, s := range []leasehold.JobState{leasehold.StateCompleted, leasehold.StateFailed, leasehold.StateCancelled} {
		prev := byState[s]
		got, err := c.d.DeleteJob(c.ctx, prev.ID)
		if err != nil {
			c.Fatalf("DeleteJob of a %s job: %v", s, err)
		}
		c.sameJob("DeleteJob result of a "+string(s)+" job", got, prev)
		if _, err := c.d.GetJob(c.ctx, prev.ID); !errors.Is(err, leasehold.ErrJobNotFound) {
			c.Errorf("GetJob of a deleted %s job: %v, want ErrJobNotFound", s, err)
		}
		if as := c.attempts(prev.ID); len(as) != 0 {
			c.Errorf("history of a deleted %s job: %s, want none", s, fmtAttempts(as))
		}
		if _, err := c.d.DeleteJob(c.ctx, prev.ID); !errors.Is(err, leasehold.ErrJobNotFound) {
			c.Errorf("DeleteJob of a deleted job: %v, want ErrJobNotFound", err)
		}
	}
	for s, want := range map[leasehold.JobState]error{
		leasehold.StateProcessing: leasehold.ErrJobRunning,
		leasehold.StatePending:    leasehold.ErrJobNotFinished,
		leasehold.StateStuck:      leasehold.ErrJobNotFinished,
	} {
		before := c.snap(byState[s].ID)
		got, err := c.d.DeleteJob(c.ctx, byState[s].ID)
		if !errors.Is(err, want) || got == nil || got.State != s {
			c.Errorf("DeleteJob of a %s job = %v, %v; want the job and %v", s, got, err, want)
		}
		c.unchanged("DeleteJob of a "+string(s)+" job", before)
	}
	c.unchanged("other jobs after DeleteJob", bystander)
	if _, err := c.d.DeleteJob(c.ctx, 1<<40); !errors.Is(err, leasehold.ErrJobNotFound) {
		c.Errorf("DeleteJob of a missing job: %v, want ErrJobNotFound", err)
	}
}
