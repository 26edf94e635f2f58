package pgdriver

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver

	leasehold "github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// txKind begins, commits and rolls back one kind of caller transaction.
type txKind struct {
	name  string
	begin func(t *testing.T, d *Driver, url string) (tx any, commit, rollback func() error)
}

var txKinds = []txKind{
	{"pgx.Tx", func(t *testing.T, d *Driver, _ string) (any, func() error, func() error) {
		ctx := testCtx(t)
		tx, err := d.pool.Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return tx, func() error { return tx.Commit(ctx) }, func() error { return tx.Rollback(ctx) }
	}},
	{"*sql.Tx", func(t *testing.T, _ *Driver, url string) (any, func() error, func() error) {
		db, err := sql.Open("pgx", url)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = db.Close() })
		tx, err := db.BeginTx(testCtx(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		return tx, tx.Commit, tx.Rollback
	}},
}

func TestInsertInCallerTx(t *testing.T) {
	for _, k := range txKinds {
		for _, commit := range []bool{true, false} {
			name := k.name + "/rollback"
			if commit {
				name = k.name + "/commit"
			}
			t.Run(name, func(t *testing.T) {
				d, url := newTestDriver(t)
				ctx := testCtx(t)
				tx, commitFn, rollbackFn := k.begin(t, d, url)
				p := job("q")
				p.UniqueKey = "key-1"
				res, err := d.Insert(ctx, tx, []*driver.InsertParams{p, job("q")})
				if err != nil {
					t.Fatalf("Insert: %v", err)
				}
				if len(res) != 2 || res[0].Job.UniqueKey != "key-1" || res[0].Duplicate || res[1].Job.ID == 0 {
					t.Fatalf("Insert results: %+v", res)
				}
				end := rollbackFn
				if commit {
					end = commitFn
				}
				if err := end(); err != nil {
					t.Fatalf("end tx: %v", err)
				}
				_, err = d.GetJob(ctx, res[0].Job.ID)
				if commit && err != nil {
					t.Fatalf("committed job missing: %v", err)
				}
				if !commit && !errors.Is(err, leasehold.ErrJobNotFound) {
					t.Fatalf("rolled-back job: err = %v, want ErrJobNotFound", err)
				}
			})
		}
	}
}

func TestFinishInCallerTx(t *testing.T) {
	for _, k := range txKinds {
		for _, commit := range []bool{true, false} {
			name := k.name + "/rollback"
			if commit {
				name = k.name + "/commit"
			}
			t.Run(name, func(t *testing.T) {
				d, url := newTestDriver(t)
				insertJobs(t, d, "q", 1)
				j := claimOne(t, d, "q", "w1", leaseTTL)
				tx, commitFn, rollbackFn := k.begin(t, d, url)
				if !finish(t, d, tx, &driver.FinishParams{
					ID: j.ID, Owner: "w1", Attempt: j.Attempt, Transition: transition(leasehold.OutcomeCompleted, ""),
				}) {
					t.Fatal("Finish in tx: fence did not match")
				}
				end := rollbackFn
				if commit {
					end = commitFn
				}
				if err := end(); err != nil {
					t.Fatalf("end tx: %v", err)
				}
				want := leasehold.StateProcessing
				if commit {
					want = leasehold.StateCompleted
				}
				if got := getJob(t, d, j.ID); got.State != want {
					t.Fatalf("state after tx = %s, want %s", got.State, want)
				}
				as, err := d.ListAttempts(testCtx(t), j.ID)
				if err != nil || len(as) != 1 {
					t.Fatalf("ListAttempts: %v %+v", err, as)
				}
				if commit != (as[0].Outcome == leasehold.OutcomeCompleted) {
					t.Fatalf("attempt outcome %q after commit=%v", as[0].Outcome, commit)
				}
			})
		}
	}
}

func TestUnsupportedTx(t *testing.T) {
	d, _ := newTestDriver(t)
	ctx := testCtx(t)
	conn, err := d.pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Release()
	for _, tx := range []any{"tx", conn.Conn(), (*sql.Tx)(nil), context.Background()} {
		_, err := d.Insert(ctx, tx, []*driver.InsertParams{job("q")})
		if !errors.Is(err, leasehold.ErrUnsupportedTx) {
			t.Errorf("Insert(%T): err = %v, want ErrUnsupportedTx", tx, err)
		}
		_, err = d.Finish(ctx, tx, []*driver.FinishParams{{ID: 1, Owner: "w", Attempt: 1, Transition: transition(leasehold.OutcomeCompleted, "")}})
		if !errors.Is(err, leasehold.ErrUnsupportedTx) {
			t.Errorf("Finish(%T): err = %v, want ErrUnsupportedTx", tx, err)
		}
	}
}
