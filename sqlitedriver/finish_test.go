package sqlitedriver

import (
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/statemachine"
)

// claimOne inserts one job and claims it for "w".
func claimOne(t *testing.T, d *Driver, maxAttempts int) *leasehold.JobRow {
	t.Helper()
	p := job(`{}`)
	p.MaxAttempts = maxAttempts
	insert(t, d, p)
	got := claim(t, d, "w", 1, time.Minute, false)
	if len(got) != 1 {
		t.Fatalf("claimed %d jobs, want 1", len(got))
	}
	return got[0]
}

func TestFinishOutcomes(t *testing.T) {
	cases := []struct {
		outcome   leasehold.Outcome
		state     leasehold.JobState
		finished  bool
		free      int
		lastError string
		delayed   bool
	}{
		{leasehold.OutcomeCompleted, leasehold.StateCompleted, true, 0, "", false},
		{leasehold.OutcomeRetried, leasehold.StatePending, false, 0, "boom", true},
		{leasehold.OutcomeFailed, leasehold.StateFailed, true, 0, "boom", false},
		{leasehold.OutcomeSnoozed, leasehold.StatePending, false, 1, "", true},
		{leasehold.OutcomeReleased, leasehold.StatePending, false, 1, "", false}, // keeps its place in line
		{leasehold.OutcomeCancelled, leasehold.StateCancelled, true, 0, "boom", false},
		{leasehold.OutcomeLeaseLost, leasehold.StatePending, false, 0, "boom", false},
	}
	for _, c := range cases {
		t.Run(string(c.outcome), func(t *testing.T) {
			d := openTest(t)
			j := claimOne(t, d, 3)
			if _, err := d.Heartbeat(testCtx(t), &driver.HeartbeatParams{Owner: "w", TTL: time.Minute,
				Leases: []driver.LeaseRef{{ID: j.ID, Attempt: j.Attempt}}}); err != nil {
				t.Fatal(err)
			}
			errText := ""
			if c.lastError != "" {
				errText = "boom"
			}
			if !finishOne(t, d, nil, &driver.FinishParams{ID: j.ID, Owner: "w", Attempt: 1,
				Transition: statemachine.Finish(statemachine.Ending{Outcome: c.outcome, Delay: time.Hour, Error: errText})}) {
				t.Fatal("fence did not match")
			}
			got := mustGet(t, d, j.ID)
			if got.State != c.state || got.FinishedAt.IsZero() == c.finished || got.FreeAttempts != c.free ||
				got.LastError != c.lastError || got.LeaseOwner != "" || !got.LeaseUntil.IsZero() ||
				got.HeartbeatAt.IsZero() {
				t.Errorf("job after %s = %+v", c.outcome, got)
			}
			if delay := got.RunAt.Sub(got.HeartbeatAt); c.delayed != (delay > 59*time.Minute) {
				t.Errorf("run_at - heartbeat_at = %v, delayed want %v", delay, c.delayed)
			}
			as := attempts(t, d, j.ID)
			if len(as) != 1 || as[0].Outcome != c.outcome || as[0].EndedAt.IsZero() ||
				as[0].Error != errText || !as[0].HeartbeatAt.Equal(got.HeartbeatAt) {
				t.Errorf("attempt after %s = %+v", c.outcome, as[0])
			}
		})
	}
}

func TestFinishFencing(t *testing.T) {
	d := openTest(t)
	j := claimOne(t, d, 3)
	for _, p := range []*driver.FinishParams{
		{ID: j.ID, Owner: "intruder", Attempt: 1, Transition: transition(leasehold.OutcomeCompleted, "")},
		{ID: j.ID, Owner: "w", Attempt: 2, Transition: transition(leasehold.OutcomeCompleted, "")},
		{ID: j.ID, Owner: "w", Attempt: 0, Transition: transition(leasehold.OutcomeFailed, "")},
	} {
		if finishOne(t, d, nil, p) {
			t.Errorf("Finish %+v accepted", p)
		}
	}
	if got := mustGet(t, d, j.ID); got.State != leasehold.StateProcessing || got.LeaseOwner != "w" {
		t.Fatalf("refused finishes changed the job: %+v", got)
	}
	if a := attempts(t, d, j.ID)[0]; !a.EndedAt.IsZero() {
		t.Fatalf("refused finishes ended the attempt: %+v", a)
	}
	ok := &driver.FinishParams{ID: j.ID, Owner: "w", Attempt: 1, Transition: transition(leasehold.OutcomeCompleted, "")}
	if !finishOne(t, d, nil, ok) {
		t.Fatal("right fence refused")
	}
	if finishOne(t, d, nil, ok) {
		t.Fatal("second completion accepted")
	}
	if _, err := d.Finish(testCtx(t), nil, []*driver.FinishParams{{ID: j.ID, Transition: transition("exploded", "")}}); err == nil {
		t.Error("unknown outcome accepted")
	}
}

func TestFinishBatchPartial(t *testing.T) {
	d := openTest(t)
	insertN(t, d, 3)
	js := claim(t, d, "w", 3, time.Minute, false)
	ids, err := d.Finish(testCtx(t), nil, []*driver.FinishParams{
		{ID: js[0].ID, Owner: "w", Attempt: 1, Transition: transition(leasehold.OutcomeCompleted, "")},
		{ID: js[1].ID, Owner: "x", Attempt: 1, Transition: transition(leasehold.OutcomeCompleted, "")},
		{ID: js[2].ID, Owner: "w", Attempt: 1, Transition: transition(leasehold.OutcomeRetried, "e")},
	})
	if err != nil || len(ids) != 2 || ids[0].ID != js[0].ID || ids[1].ID != js[2].ID {
		t.Fatalf("Finish = %v, %v; want [%d %d]", ids, err, js[0].ID, js[2].ID)
	}
	if a := attempts(t, d, js[1].ID)[0]; !a.EndedAt.IsZero() {
		t.Errorf("refused lease's attempt ended: %+v", a)
	}
}

// TestFinishUniformSameLeaseTwice checks a batch of one transition that
// names one lease twice: the lease is applied once and reported once,
// with one history row, and the batch is not refused. (The history rows
// written then count two for one lease, which must not be taken for
// every lease of the batch having matched.)
func TestFinishUniformSameLeaseTwice(t *testing.T) {
	d := openTest(t)
	j := claimOne(t, d, 3)
	p := &driver.FinishParams{ID: j.ID, Owner: "w", Attempt: 1, Transition: transition(leasehold.OutcomeCompleted, "")}
	ids, err := d.Finish(testCtx(t), nil, []*driver.FinishParams{p, p})
	if err != nil || len(ids) != 1 || ids[0].ID != j.ID {
		t.Fatalf("Finish = %v, %v; want [%d]", ids, err, j.ID)
	}
	if got := mustGet(t, d, j.ID); got.State != leasehold.StateCompleted {
		t.Errorf("job = %+v, want completed", got)
	}
	if as := attempts(t, d, j.ID); len(as) != 1 || as[0].Outcome != leasehold.OutcomeCompleted {
		t.Errorf("attempts = %+v, want one completed", as)
	}
}

// TestFinishUniformStaleAndCurrentAttempt checks a batch of one
// transition that names one job twice, at a stale attempt and at the
// current one: the lease set then holds the job's id twice, the stale
// attempt first, and only the current attempt's fence matches. A lease
// set that kept one member per id would drop the current lease.
func TestFinishUniformStaleAndCurrentAttempt(t *testing.T) {
	d := openTest(t)
	j := claimOne(t, d, 3)
	done := transition(leasehold.OutcomeCompleted, "")
	ids, err := d.Finish(testCtx(t), nil, []*driver.FinishParams{
		{ID: j.ID, Owner: "w", Attempt: 1, Transition: done},
		{ID: j.ID, Owner: "w", Attempt: 0, Transition: done},
	})
	if err != nil || len(ids) != 1 || ids[0].ID != j.ID {
		t.Fatalf("Finish = %v, %v; want [%d]", ids, err, j.ID)
	}
	if got := mustGet(t, d, j.ID); got.State != leasehold.StateCompleted {
		t.Errorf("job = %+v, want completed", got)
	}
	if as := attempts(t, d, j.ID); len(as) != 1 || as[0].Attempt != 1 || as[0].Outcome != leasehold.OutcomeCompleted {
		t.Errorf("attempts = %+v, want attempt 1 completed", as)
	}
}

func TestFinishInTx(t *testing.T) {
	d := openTest(t)
	ctx := testCtx(t)
	if _, err := d.DB().ExecContext(ctx, `CREATE TABLE ledger (job_id INTEGER)`); err != nil {
		t.Fatal(err)
	}
	j := claimOne(t, d, 3)
	p := &driver.FinishParams{ID: j.ID, Owner: "w", Attempt: 1, Transition: transition(leasehold.OutcomeCompleted, "")}
	for _, commit := range []bool{false, true} {
		tx, err := d.DB().BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO ledger VALUES (?)`, j.ID); err != nil {
			t.Fatal(err)
		}
		if !finishOne(t, d, tx, p) {
			t.Fatal("fence refused in tx")
		}
		if commit {
			err = tx.Commit()
		} else {
			err = tx.Rollback()
		}
		if err != nil {
			t.Fatal(err)
		}
		var n int
		if err := d.DB().QueryRowContext(ctx, `SELECT count(*) FROM ledger`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		got := mustGet(t, d, j.ID)
		a := attempts(t, d, j.ID)[0]
		if commit && (got.State != leasehold.StateCompleted || n != 1 || a.Outcome != leasehold.OutcomeCompleted) {
			t.Errorf("after commit: state %s, ledger %d, attempt %+v", got.State, n, a)
		}
		if !commit && (got.State != leasehold.StateProcessing || n != 0 || !a.EndedAt.IsZero()) {
			t.Errorf("after rollback: state %s, ledger %d, attempt %+v", got.State, n, a)
		}
	}
}
