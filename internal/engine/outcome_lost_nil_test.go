package engine

import (
	"errors"
	"testing"
)

// TestDecideLostInDBHandlerNil: once a CompleteTx of the lease was
// refused (MarkLost), a handler that returns nil gets nothing written, as
// one that returns an error does: a completion, or the safety write after
// an earlier CompleteTx, would only be refused again and reported as a
// second ending of the attempt. After a heartbeat found the lease gone,
// a nil is written as a completion, for the fence to refuse.
func TestDecideLostInDBHandlerNil(t *testing.T) {
	for _, afterTx := range []bool{false, true} {
		for _, err := range []error{nil, errors.New("handler failed")} {
			l := decideLease(nil)
			l.completedInTx.Store(afterTx)
			l.MarkLost()
			e := NewExecutor(ExecutorConfig{Owner: "w1", Classify: classifyRetry, GiveUp: giveUpLeaseLost})
			if item := e.decide(l, err); item != nil {
				t.Errorf("afterTx=%v err=%v: decided %q, want nothing written", afterTx, err, item.p.Outcome)
			}
		}
	}
	l := decideLeaseLost()
	e := NewExecutor(ExecutorConfig{Owner: "w1", Classify: classifyRetry, GiveUp: giveUpLeaseLost})
	if item := e.decide(l, nil); item == nil || item.p.Outcome != "completed" {
		t.Errorf("heartbeat found the lease gone, handler returned nil: decided %v, want a completion for the fence to refuse", item)
	}
	if item := e.decide(decideLeaseLost(), errors.New("handler failed")); item != nil {
		t.Errorf("heartbeat found the lease gone, handler failed: decided %q, want nothing written", item.p.Outcome)
	}
}

// decideLeaseLost is a lease a heartbeat found gone from the database.
func decideLeaseLost() *Lease {
	l := decideLease(nil)
	l.lostInDB.Store(true)
	return l
}

// TestLeaseLostInDBAndCompletedInTx: the accessors report what the lease
// records.
func TestLeaseLostInDBAndCompletedInTx(t *testing.T) {
	l := decideLease(nil)
	if l.LostInDB() || l.CompletedInTx() {
		t.Fatalf("new lease: LostInDB %v, CompletedInTx %v; want false, false", l.LostInDB(), l.CompletedInTx())
	}
	l.MarkCompletedIn(&struct{}{})
	l.MarkLost()
	if !l.LostInDB() || !l.CompletedInTx() {
		t.Fatalf("after MarkCompletedIn and MarkLost: LostInDB %v, CompletedInTx %v; want true, true", l.LostInDB(), l.CompletedInTx())
	}
}
