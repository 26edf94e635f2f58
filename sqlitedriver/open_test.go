package sqlitedriver

import (
	"context"
	"database/sql"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

func TestOpenPathNeedingEscapes(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a dir?#%", "jobs 100%.db")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	d := openPath(t, path)
	insertN(t, d, 1)
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("database not created at %q: %v", path, err)
	}
}

// TestNewCallerDB checks New on a caller-owned *sql.DB: a first Insert and
// Finish inside the caller's transaction (which holds the only connection)
// must not wait for a connection, and Close leaves the DB open.
func TestNewCallerDB(t *testing.T) {
	path := filepath.Join(t.TempDir(), "caller.db")
	db, err := sql.Open("sqlite", DSN(path))
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	defer db.Close()
	d, err := New(db)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := d.Migrate(ctx); err != nil {
		t.Fatal(err)
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	res, err := d.Insert(ctx, tx, []*driver.InsertParams{job(`{}`)})
	if err != nil {
		t.Fatalf("Insert in the caller's tx: %v", err)
	}
	ids, err := d.Finish(ctx, tx, []*driver.FinishParams{{ID: res[0].Job.ID, Owner: "w", Attempt: 1,
		Transition: transition(leasehold.OutcomeCompleted, "")}})
	if err != nil || len(ids) != 0 {
		t.Fatalf("Finish of an unclaimed job in tx = %v, %v; want refused", ids, err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := d.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.PingContext(ctx); err != nil {
		t.Errorf("caller's DB closed by Driver.Close: %v", err)
	}
	if _, err := New(nil); err == nil {
		t.Error("New(nil) succeeded")
	}
}

func TestFinishStaleAndCurrentInOneBatch(t *testing.T) {
	d := openTest(t)
	ctx := testCtx(t)
	insert(t, d, job(`{}`))
	first := claim(t, d, "w", 1, -time.Second, false)[0]
	cur := claim(t, d, "w2", 1, time.Minute, true)[0]
	if cur.ID != first.ID || cur.Attempt != 2 {
		t.Fatalf("takeover = %+v", cur)
	}
	ids, err := d.Finish(ctx, nil, []*driver.FinishParams{
		{ID: cur.ID, Owner: "w", Attempt: 1, Transition: transition(leasehold.OutcomeLeaseLost, "")},
		{ID: cur.ID, Owner: "x", Attempt: 2, Transition: transition(leasehold.OutcomeFailed, "")},
		{ID: cur.ID, Owner: "w2", Attempt: 2, Transition: transition(leasehold.OutcomeCompleted, "")},
	})
	if err != nil || len(ids) != 1 || ids[0].ID != cur.ID {
		t.Fatalf("Finish = %v, %v; want [%d]", ids, err, cur.ID)
	}
	if j := mustGet(t, d, cur.ID); j.State != leasehold.StateCompleted {
		t.Errorf("state = %s, want completed", j.State)
	}
	as := attempts(t, d, cur.ID)
	if len(as) != 2 || as[0].Outcome != leasehold.OutcomeLeaseExpired || as[1].Outcome != leasehold.OutcomeCompleted {
		t.Errorf("history = %+v %+v", as[0], as[1])
	}
}
