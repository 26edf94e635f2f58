package pgdriver

import (
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	leasehold "github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// TestEndedAttemptsTxSeesTheCallersCompletion: EndedAttemptsTx, read in
// the caller's transaction (a pgx.Tx or a *sql.Tx), sees a completion
// that transaction holds uncommitted, which EndedAttempts, outside it,
// does not; a completion made in a pgx savepoint shows through the
// transaction once the savepoint is released, and a completion made in
// the transaction shows through a savepoint of it.
func TestEndedAttemptsTxSeesTheCallersCompletion(t *testing.T) {
	for _, k := range txKinds {
		t.Run(k.name, func(t *testing.T) {
			d, url := newTestDriver(t)
			insertJobs(t, d, "q", 1)
			j := claimOne(t, d, "q", "w1", leaseTTL)
			tx, _, rollback := k.begin(t, d, url)
			defer func() { _ = rollback() }()
			if !finish(t, d, tx, completionOf(j)) {
				t.Fatal("Finish in tx: fence did not match")
			}
			checkEndedInTx(t, d, tx, j, true)
			if pt, ok := tx.(pgx.Tx); ok {
				sp, err := pt.Begin(testCtx(t))
				if err != nil {
					t.Fatal(err)
				}
				checkEndedInTx(t, d, sp, j, true)
			}
			checkEndedOutside(t, d, j)
		})
	}
	t.Run("pgx savepoint released", func(t *testing.T) {
		d, _ := newTestDriver(t)
		insertJobs(t, d, "q", 1)
		j := claimOne(t, d, "q", "w1", leaseTTL)
		ctx := testCtx(t)
		tx, err := d.pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(ctx) }()
		sp, err := tx.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !finish(t, d, sp, completionOf(j)) {
			t.Fatal("Finish in the savepoint: fence did not match")
		}
		checkEndedInTx(t, d, tx, j, true) // savepoint still open
		if err := sp.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		checkEndedInTx(t, d, tx, j, true)
		checkEndedOutside(t, d, j)
	})
	t.Run("pgx savepoint rolled back", func(t *testing.T) {
		d, _ := newTestDriver(t)
		insertJobs(t, d, "q", 1)
		j := claimOne(t, d, "q", "w1", leaseTTL)
		ctx := testCtx(t)
		tx, err := d.pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		defer func() { _ = tx.Rollback(ctx) }()
		sp, err := tx.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !finish(t, d, sp, completionOf(j)) {
			t.Fatal("Finish in the savepoint: fence did not match")
		}
		if err := sp.Rollback(ctx); err != nil {
			t.Fatal(err)
		}
		checkEndedInTx(t, d, tx, j, false)
	})
}

// TestEndedAttemptsTxRefusesAbortedAndMissingTx: in a transaction an
// earlier error aborted, EndedAttemptsTx fails (SQLSTATE 25P02) rather
// than answer; without a transaction, or with one of a type the driver
// does not take, it is ErrUnsupportedTx.
func TestEndedAttemptsTxRefusesAbortedAndMissingTx(t *testing.T) {
	d, _ := newTestDriver(t)
	insertJobs(t, d, "q", 1)
	j := claimOne(t, d, "q", "w1", leaseTTL)
	ctx := testCtx(t)
	tx, err := d.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = tx.Rollback(ctx) }()
	if !finish(t, d, tx, completionOf(j)) {
		t.Fatal("Finish in tx: fence did not match")
	}
	if _, err := tx.Exec(ctx, `SELECT 1/0`); err == nil {
		t.Fatal("division by zero did not fail")
	}
	_, err = d.EndedAttemptsTx(ctx, tx, []driver.LeaseRef{{ID: j.ID, Attempt: j.Attempt}})
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) || pgErr.Code != "25P02" {
		t.Errorf("EndedAttemptsTx in an aborted transaction = %v; want SQLSTATE 25P02", err)
	}
	for _, bad := range []any{nil, "tx", (*pgxTxNil)(nil)} {
		if _, err := d.EndedAttemptsTx(ctx, bad, []driver.LeaseRef{{ID: j.ID, Attempt: j.Attempt}}); !errors.Is(err, leasehold.ErrUnsupportedTx) {
			t.Errorf("EndedAttemptsTx(%T) = %v; want ErrUnsupportedTx", bad, err)
		}
	}
}

// pgxTxNil is a pgx.Tx type whose nil pointer stands for a transaction
// never begun.
type pgxTxNil struct{ pgx.Tx }

// completionOf is the completion of lease j by its owner.
func completionOf(j *leasehold.JobRow) *driver.FinishParams {
	return &driver.FinishParams{ID: j.ID, Owner: j.LeaseOwner, Attempt: j.Attempt, Transition: transition(leasehold.OutcomeCompleted, "")}
}

// checkEndedInTx checks what EndedAttemptsTx reads of lease j in tx: its
// completion by its owner, or, when !want, no ended attempt.
func checkEndedInTx(t *testing.T, d *Driver, tx any, j *leasehold.JobRow, want bool) {
	t.Helper()
	got, err := d.EndedAttemptsTx(testCtx(t), tx, []driver.LeaseRef{{ID: j.ID, Attempt: j.Attempt}})
	if err != nil {
		t.Fatalf("EndedAttemptsTx: %v", err)
	}
	switch {
	case !want && len(got) != 0:
		t.Errorf("EndedAttemptsTx read %+v; want no ended attempt", got)
	case want && (len(got) != 1 || got[0] != driver.EndedAttempt{ID: j.ID, Attempt: j.Attempt, Owner: j.LeaseOwner, Outcome: leasehold.OutcomeCompleted}):
		t.Errorf("EndedAttemptsTx read %+v; want attempt %d of job %d completed by %s", got, j.Attempt, j.ID, j.LeaseOwner)
	}
}

// checkEndedOutside checks that EndedAttempts, outside the transaction
// that completed lease j and has not committed, reads no ended attempt.
func checkEndedOutside(t *testing.T, d *Driver, j *leasehold.JobRow) {
	t.Helper()
	got, err := d.EndedAttempts(testCtx(t), []driver.LeaseRef{{ID: j.ID, Attempt: j.Attempt}})
	if err != nil || len(got) != 0 {
		t.Errorf("EndedAttempts outside the transaction = %+v, %v; want none", got, err)
	}
}
