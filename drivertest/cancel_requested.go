package drivertest

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/statemachine"
)

// testCancelRequestedEndsCancelled: an operator asked to cancel a job
// while it ran (CancelJob on a processing job), and its attempt ended
// before a heartbeat told the worker. A transition that would put the job
// back in line (retried, snoozed, released, given up, or stuck) cancels it
// instead, finished, the attempt row ending cancelled; completed and
// failed stand. Each ending is written alone (the uniform statement)
// and all of them together (the mixed one), and a job whose cancel was
// not requested is retried as usual.
func testCancelRequestedEndsCancelled(c *tc) {
	endings := []struct {
		e    statemachine.Ending
		want leasehold.JobState
	}{
		{statemachine.Ending{Outcome: leasehold.OutcomeRetried, Error: "boom"}, leasehold.StateCancelled},
		{statemachine.Ending{Outcome: leasehold.OutcomeSnoozed}, leasehold.StateCancelled},
		{statemachine.Ending{Outcome: leasehold.OutcomeReleased}, leasehold.StateCancelled},
		{statemachine.Ending{Outcome: leasehold.OutcomeLeaseLost, Error: "gave up"}, leasehold.StateCancelled},
		{statemachine.Ending{Outcome: leasehold.OutcomeFailed, Error: "boom", Flag: true}, leasehold.StateCancelled},
		{statemachine.Ending{Outcome: leasehold.OutcomeCompleted}, leasehold.StateCompleted},
		{statemachine.Ending{Outcome: leasehold.OutcomeFailed, Error: "boom"}, leasehold.StateFailed},
	}
	rows := c.insertN(2*len(endings)+1, "q", "k")
	claim := func(i int) *leasehold.JobRow {
		j := c.claimID(c.d, rows[i].ID, "w", liveTTL, false)
		if _, err := c.d.CancelJob(c.ctx, j.ID); err != nil {
			c.Fatalf("CancelJob(processing): %v", err)
		}
		return j
	}
	var mixed []*driver.FinishParams
	for i, en := range endings {
		alone := claim(i)
		c.finish(token(alone.ID, "w", alone.Attempt, en.e))
		j := claim(len(endings) + i)
		mixed = append(mixed, token(j.ID, "w", j.Attempt, en.e))
	}
	c.finish(mixed...)
	for i, en := range endings {
		for _, id := range []int64{rows[i].ID, rows[len(endings)+i].ID} {
			j := c.get(id)
			what := fmt.Sprintf("job %d, cancel requested, attempt ended %s (flag %v)", id, en.e.Outcome, en.e.Flag)
			c.eq(what+": state", j.State, en.want)
			c.eq(what+": finished", !j.FinishedAt.IsZero(), en.want.Finished())
			outcome := en.e.Outcome
			if en.want == leasehold.StateCancelled {
				outcome = leasehold.OutcomeCancelled
			}
			if h := c.attempts(id); len(h) != 1 || h[0].Outcome != outcome {
				c.Errorf("%s: history %s, want one attempt ended %s", what, fmtHistory(h), outcome)
			}
		}
	}
	plain := c.claimID(c.d, rows[2*len(endings)].ID, "w", liveTTL, false)
	c.finish(token(plain.ID, "w", plain.Attempt, endings[0].e))
	c.eq("job without a cancel request, retried: state", c.get(plain.ID).State, leasehold.StatePending)
}

// testClientCancelBeforeHeartbeat: an operator cancels a running job
// whose handler then fails before any heartbeat tells the worker; the job
// ends cancelled after that one attempt, ended cancelled, and its handler
// never runs again.
func testClientCancelBeforeHeartbeat(e *clientEnv) {
	started, release := make(chan struct{}, 4), make(chan struct{})
	c := e.newClient(e.d, e.workers(func(context.Context, *leasehold.Job[testArgs]) error {
		started <- struct{}{}
		<-release
		return errors.New("boom") // retryable: the job would run again
	}), func(c *leasehold.Config) { c.LeaseTTL = 30 * time.Second }) // heartbeats every 10 s
	id := e.insertOpts(c, &leasehold.InsertOpts{})
	e.waitGate(started, "the handler to start")
	if row, err := c.CancelJob(e.ctx, id); err != nil || !row.CancelRequested {
		e.Fatalf("CancelJob(processing) = %+v, %v; want cancel requested", row, err)
	}
	close(release)
	row := e.waitState(id, leasehold.StateCancelled, 30*time.Second)
	if h := e.history(id); row.Attempt != 1 || len(h) != 1 || h[0].Outcome != leasehold.OutcomeCancelled {
		e.Fatalf("cancelled job: attempt %d, history %s; want one attempt, ended cancelled", row.Attempt, fmtHistory(h))
	}
	if n := len(started); n != 0 {
		e.Fatalf("the handler ran %d more times after the cancel", n)
	}
}
