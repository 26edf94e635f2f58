package statemachine

import (
	"testing"
	"time"

	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/leasetype"
)

func TestFinish(t *testing.T) {
	const h = time.Hour
	cases := []struct {
		e    Ending
		want driver.Transition
	}{
		{Ending{Outcome: leasetype.OutcomeCompleted, Delay: 0, Error: ""}, driver.Transition{
			State: leasetype.StateCompleted, KeepRunAt: true, KeepLastError: true, Finished: true,
			Outcome: leasetype.OutcomeCompleted}},
		{Ending{Outcome: leasetype.OutcomeRetried, Delay: h, Error: "boom"}, driver.Transition{
			State: leasetype.StatePending, Delay: h, LastError: "boom",
			Outcome: leasetype.OutcomeRetried, AttemptError: "boom",
			CancelledOutcome: leasetype.OutcomeCancelled}},
		{Ending{Outcome: leasetype.OutcomeRetried, Delay: 0, Error: ""}, driver.Transition{
			State: leasetype.StatePending, Outcome: leasetype.OutcomeRetried,
			CancelledOutcome: leasetype.OutcomeCancelled}},
		{Ending{Outcome: leasetype.OutcomeFailed, Delay: h, Error: "boom"}, driver.Transition{
			State: leasetype.StateFailed, KeepRunAt: true, LastError: "boom", Finished: true,
			Outcome: leasetype.OutcomeFailed, AttemptError: "boom"}},
		{Ending{Outcome: leasetype.OutcomeSnoozed, Delay: h, Error: ""}, driver.Transition{
			State: leasetype.StatePending, Delay: h, FreeAttempt: true, KeepLastError: true,
			Outcome:          leasetype.OutcomeSnoozed,
			CancelledOutcome: leasetype.OutcomeCancelled}},
		{Ending{Outcome: leasetype.OutcomeReleased, Delay: h, Error: ""}, driver.Transition{
			State: leasetype.StatePending, KeepRunAt: true, FreeAttempt: true, KeepLastError: true,
			Outcome:          leasetype.OutcomeReleased,
			CancelledOutcome: leasetype.OutcomeCancelled}},
		{Ending{Outcome: leasetype.OutcomeLeaseLost, Delay: h, Error: "gave up"}, driver.Transition{
			State: leasetype.StatePending, KeepRunAt: true, LastError: "gave up",
			Outcome: leasetype.OutcomeLeaseLost, AttemptError: "gave up",
			CancelledOutcome: leasetype.OutcomeCancelled}},
		{Ending{Outcome: leasetype.OutcomeCancelled, Delay: h, Error: "by operator"}, driver.Transition{
			State: leasetype.StateCancelled, KeepRunAt: true, LastError: "by operator", Finished: true,
			Outcome: leasetype.OutcomeCancelled, AttemptError: "by operator"}},
		{Ending{Outcome: leasetype.OutcomeCancelled, Delay: 0, Error: ""}, driver.Transition{
			State: leasetype.StateCancelled, KeepRunAt: true, KeepLastError: true, Finished: true,
			Outcome: leasetype.OutcomeCancelled}},
		// Flag: a reconcile job that gives up is stuck, its outcome kept.
		{Ending{Outcome: leasetype.OutcomeFailed, Error: "boom", Flag: true}, driver.Transition{
			State: leasetype.StateStuck, KeepRunAt: true, LastError: "boom",
			Outcome: leasetype.OutcomeFailed, AttemptError: "boom",
			CancelledOutcome: leasetype.OutcomeCancelled}},
		{Ending{Outcome: leasetype.OutcomeCancelled, Flag: true}, driver.Transition{
			State: leasetype.StateStuck, KeepRunAt: true, KeepLastError: true,
			Outcome:          leasetype.OutcomeCancelled,
			CancelledOutcome: leasetype.OutcomeCancelled}},
		{Ending{Outcome: leasetype.OutcomeRetried, Delay: h, Error: "boom", Flag: true}, driver.Transition{
			State: leasetype.StatePending, Delay: h, LastError: "boom",
			Outcome: leasetype.OutcomeRetried, AttemptError: "boom",
			CancelledOutcome: leasetype.OutcomeCancelled}},
	}
	seen := map[leasetype.Outcome]bool{}
	for _, c := range cases {
		got := Finish(c.e)
		if got != c.want {
			t.Errorf("Finish(%+v) =\n\t%+v, want\n\t%+v", c.e, got, c.want)
		}
		if err := got.Validate(); err != nil {
			t.Errorf("Finish(%+v) is not a valid transition: %v", c.e, err)
		}
		seen[c.e.Outcome] = true
	}
	for _, o := range Outcomes {
		if !seen[o] {
			t.Errorf("outcome %s has no case", o)
		}
	}
}

func TestFinishUnknownOutcomeRefused(t *testing.T) {
	for _, o := range []leasetype.Outcome{leasetype.OutcomeRunning, leasetype.OutcomeLeaseExpired, "bogus"} {
		if err := Finish(Ending{Outcome: o}).Validate(); err == nil {
			t.Errorf("Finish(%q) gave a valid transition, want one every driver refuses", o)
		}
	}
}

func TestRescue(t *testing.T) {
	job := func(queue string, attempt, free, max int, cancel bool) *leasetype.JobRow {
		return &leasetype.JobRow{Queue: queue, State: leasetype.StateProcessing, Attempt: attempt,
			FreeAttempts: free, MaxAttempts: max, CancelRequested: cancel, LeaseOwner: "host-1"}
	}
	cases := []struct {
		name    string
		job     *leasetype.JobRow
		flagged bool
		want    leasetype.JobState
	}{
		{"budget left", job("q", 1, 0, 3, false), false, leasetype.StatePending},
		{"budget left, flagged", job("q", 1, 0, 3, false), true, leasetype.StateStuck},
		{"budget spent", job("q", 3, 0, 3, false), false, leasetype.StateFailed},
		{"budget spent, flagged", job("q", 3, 0, 3, false), true, leasetype.StateStuck}, // an operator decides
		{"free attempts leave budget", job("q", 3, 1, 3, false), false, leasetype.StatePending},
		{"cancel requested", job("q", 1, 0, 3, true), false, leasetype.StateCancelled},
		{"cancel requested, budget spent, flagged", job("q", 3, 0, 3, true), true, leasetype.StateCancelled},
	}
	for _, c := range cases {
		got := Rescue(c.job, c.flagged)
		want := driver.Transition{
			State: c.want, KeepRunAt: true, LastError: "lease expired (owner host-1)", Finished: c.want.Finished(),
			Outcome: leasetype.OutcomeLeaseExpired, AttemptError: "lease expired (owner host-1)",
		}
		if got != want {
			t.Errorf("%s: Rescue =\n\t%+v, want\n\t%+v", c.name, got, want)
		}
		if err := got.Validate(); err != nil {
			t.Errorf("%s: not a valid transition: %v", c.name, err)
		}
	}
}

func TestRescuerFlagsItsQueues(t *testing.T) {
	decide := Rescuer([]string{"payments", "refunds"})
	for queue, want := range map[string]leasetype.JobState{
		"payments": leasetype.StateStuck, "refunds": leasetype.StateStuck, "emails": leasetype.StatePending,
	} {
		j := &leasetype.JobRow{Queue: queue, State: leasetype.StateProcessing, Attempt: 1, MaxAttempts: 3}
		if got := decide(j).State; got != want {
			t.Errorf("Rescuer: job of queue %s -> %s, want %s", queue, got, want)
		}
	}
	if got := Rescuer(nil)(&leasetype.JobRow{Queue: "q", Attempt: 1, MaxAttempts: 3}).State; got != leasetype.StatePending {
		t.Errorf("Rescuer(nil) -> %s, want pending", got)
	}
}

// FuzzFinish checks what holds for every ending: a known outcome gives a
// valid transition that records the outcome and error as given and never
// leaves the job processing; an unknown one gives a transition drivers
// refuse.
func FuzzFinish(f *testing.F) {
	for i, o := range append(Outcomes, leasetype.OutcomeLeaseExpired, "", "bogus") {
		f.Add(string(o), int64(i)*int64(time.Second), "err")
		f.Add(string(o), int64(0), "")
	}
	f.Fuzz(func(t *testing.T, outcome string, delay int64, text string) {
		e := Ending{Outcome: leasetype.Outcome(outcome), Delay: time.Duration(delay), Error: text}
		tr := Finish(e)
		_, known := rules[e.Outcome]
		if err := tr.Validate(); (err == nil) != known {
			t.Fatalf("Finish(%+v) = %+v: Validate %v, known outcome %v", e, tr, err, known)
		}
		if tr.Outcome != e.Outcome || tr.AttemptError != e.Error {
			t.Fatalf("Finish(%+v) records %q %q", e, tr.Outcome, tr.AttemptError)
		}
		if known && !tr.KeepRunAt && tr.Delay != e.Delay {
			t.Fatalf("Finish(%+v) delays by %v", e, tr.Delay)
		}
		if known && (tr.CancelledOutcome == leasetype.OutcomeCancelled) != tr.Cancellable() {
			t.Fatalf("Finish(%+v) to %s records %q when a cancel request cancels the job", e, tr.State, tr.CancelledOutcome)
		}
	})
}
