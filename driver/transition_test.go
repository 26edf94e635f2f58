package driver

import (
	"testing"
	"time"

	"github.com/leasehold/leasehold/leasetype"
)

func TestTransitionValidate(t *testing.T) {
	ok := Transition{State: leasetype.StatePending, KeepRunAt: true, KeepLastError: true, Outcome: leasetype.OutcomeReleased}
	if err := ok.Validate(); err != nil {
		t.Fatalf("valid transition refused: %v", err)
	}
	for _, st := range []leasetype.JobState{leasetype.StatePending, leasetype.StateStuck} {
		c := ok
		c.State, c.CancelledOutcome = st, leasetype.OutcomeCancelled
		if err := c.Validate(); err != nil {
			t.Errorf("transition to %s with a cancelled outcome refused: %v", st, err)
		}
	}
	bad := map[string]func(*Transition){
		"no state":                   func(t *Transition) { t.State = "" },
		"unknown state":              func(t *Transition) { t.State = "done" },
		"processing":                 func(t *Transition) { t.State = leasetype.StateProcessing },
		"finished non-terminal":      func(t *Transition) { t.Finished = true },
		"terminal not finished":      func(t *Transition) { t.State = leasetype.StateCompleted },
		"running outcome":            func(t *Transition) { t.Outcome = leasetype.OutcomeRunning },
		"unknown outcome":            func(t *Transition) { t.Outcome = "exploded" },
		"delay with kept run_at":     func(t *Transition) { t.Delay = time.Second },
		"error with kept last_error": func(t *Transition) { t.LastError = "x" },
		"reconciling without Spawn":  func(t *Transition) { t.State = leasetype.StateReconciling },
		"Spawn without reconciling":  func(t *Transition) { t.Spawn = &InsertParams{Kind: "k"} },
		"unknown cancelled outcome":  func(t *Transition) { t.CancelledOutcome = "exploded" },
		"cancelled outcome of a terminal state": func(t *Transition) {
			t.State, t.Finished, t.CancelledOutcome = leasetype.StateCompleted, true, leasetype.OutcomeCancelled
		},
	}
	for name, change := range bad {
		tr := ok
		change(&tr)
		if err := tr.Validate(); err == nil {
			t.Errorf("%s: %+v accepted", name, tr)
		}
	}
}

func TestValidateFinishRefusesSpawn(t *testing.T) {
	tr := Transition{State: leasetype.StateReconciling, KeepRunAt: true, KeepLastError: true,
		Outcome: leasetype.OutcomeLeaseExpired, Spawn: &InsertParams{Kind: "k"}}
	if err := tr.Validate(); err != nil {
		t.Fatalf("reconciling with Spawn refused: %v", err)
	}
	if err := ValidateFinish([]*FinishParams{{ID: 1, Owner: "o", Attempt: 1, Transition: tr}}); err == nil {
		t.Error("Finish of a transition to reconciling accepted: only RescueExpired inserts the reconcile job")
	}
}
