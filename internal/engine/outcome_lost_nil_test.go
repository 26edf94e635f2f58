package engine

import (
	"errors"
	"testing"
)

// TestDecideLostInDBHandlerNil: once the database said the lease is
// someone else's (a refused CompleteTx, or a heartbeat), a handler that
// returns nil gets nothing written, as one that returns an error does:
// a completion, or the safety write after an earlier CompleteTx, would
// only be refused again and reported as a second ending of the attempt.
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
