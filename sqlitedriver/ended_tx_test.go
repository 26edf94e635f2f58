package sqlitedriver

import (
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// TestEndedAttemptsTxSeesTheCallersCompletion: EndedAttemptsTx, read in
// the caller's *sql.Tx, sees the completion that transaction holds
// uncommitted, which EndedAttempts, outside it, does not; a completion
// rolled back to a savepoint of the transaction is no longer read.
func TestEndedAttemptsTxSeesTheCallersCompletion(t *testing.T) {
	d := openTest(t)
	ctx := testCtx(t)
	insert(t, d, job(`{}`))
	j := claim(t, d, "w1", 1, time.Minute, false)[0]
	ref := []driver.LeaseRef{{ID: j.ID, Attempt: j.Attempt}}
	want := driver.EndedAttempt{ID: j.ID, Attempt: j.Attempt, Owner: "w1", Outcome: leasehold.OutcomeCompleted}
	tx, err := d.DB().BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, `SAVEPOINT app`); err != nil {
		t.Fatal(err)
	}
	p := &driver.FinishParams{ID: j.ID, Owner: "w1", Attempt: j.Attempt, Transition: transition(leasehold.OutcomeCompleted, "")}
	if !finishOne(t, d, tx, p) {
		t.Fatal("Finish in tx: fence did not match")
	}
	got, err := d.EndedAttemptsTx(ctx, tx, ref)
	if err != nil || len(got) != 1 || got[0] != want {
		t.Errorf("EndedAttemptsTx in the completing transaction = %+v, %v; want %+v", got, err, want)
	}
	if got, err := d.EndedAttempts(ctx, ref); err != nil || len(got) != 0 {
		t.Errorf("EndedAttempts outside the transaction = %+v, %v; want none", got, err)
	}
	if _, err := tx.ExecContext(ctx, `ROLLBACK TO app`); err != nil {
		t.Fatal(err)
	}
	if got, err := d.EndedAttemptsTx(ctx, tx, ref); err != nil || len(got) != 0 {
		t.Errorf("EndedAttemptsTx after the savepoint rolled back = %+v, %v; want none", got, err)
	}
}

// TestEndedAttemptsTxRefusesMissingTx: without a transaction, or with one
// of a type the driver does not take, EndedAttemptsTx is ErrUnsupportedTx.
func TestEndedAttemptsTxRefusesMissingTx(t *testing.T) {
	d := openTest(t)
	for _, bad := range []any{nil, (*sql.Tx)(nil), "tx"} {
		if _, err := d.EndedAttemptsTx(testCtx(t), bad, []driver.LeaseRef{{ID: 1, Attempt: 1}}); !errors.Is(err, leasehold.ErrUnsupportedTx) {
			t.Errorf("EndedAttemptsTx(%T) = %v; want ErrUnsupportedTx", bad, err)
		}
	}
}
