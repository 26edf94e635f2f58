package sqlitedriver

import (
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

func TestInsertFields(t *testing.T) {
	d := openTest(t)
	ctx := testCtx(t)
	before, err := d.Now(ctx)
	if err != nil {
		t.Fatal(err)
	}
	at := time.Date(2030, 1, 2, 3, 4, 5, 123456000, time.UTC)
	jobs := insert(t, d,
		&driver.InsertParams{Kind: "k", Queue: "q", Args: []byte(`{"a":1}`),
			Metadata: []byte(`{"m":true}`), Priority: 2, MaxAttempts: 5, UniqueKey: "u1", RunAt: at},
		&driver.InsertParams{Kind: "k2", Queue: "q2", Args: []byte(`{}`), MaxAttempts: 1, RunIn: time.Hour},
	)
	a, b := jobs[0], jobs[1]
	if a.Kind != "k" || a.Queue != "q" || a.State != leasehold.StatePending || a.Priority != 2 ||
		a.MaxAttempts != 5 || a.Attempt != 0 || a.UniqueKey != "u1" || string(a.Args) != `{"a":1}` ||
		string(a.Metadata) != `{"m":true}` || !a.RunAt.Equal(at) || a.RunAt.Location() != time.UTC {
		t.Errorf("inserted job = %+v", a)
	}
	if string(b.Metadata) != `{}` || b.UniqueKey != "" || !b.LeaseUntil.IsZero() || !b.FinishedAt.IsZero() {
		t.Errorf("defaults = %+v", b)
	}
	if d := b.RunAt.Sub(b.CreatedAt); d != time.Hour {
		t.Errorf("RunIn: run_at - created_at = %v, want 1h", d)
	}
	if b.CreatedAt.Before(before) {
		t.Errorf("created_at %v before database now %v", b.CreatedAt, before)
	}
	if got := mustGet(t, d, a.ID); got.ID != a.ID || !got.RunAt.Equal(at) {
		t.Errorf("GetJob = %+v", got)
	}
}

func TestInsertUniqueDuplicate(t *testing.T) {
	d := openTest(t)
	p := job(`{"x":1}`)
	p.UniqueKey = "pay-42"
	first := insert(t, d, p)[0]
	q := job(`{"x":2}`)
	q.UniqueKey = "pay-42"
	res, err := d.Insert(testCtx(t), nil, []*driver.InsertParams{job(`{}`), q, q})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Duplicate || res[0].Job.ID == first.ID {
		t.Errorf("fresh job reported as duplicate: %+v", res[0])
	}
	for _, r := range res[1:] {
		if !r.Duplicate || r.Job.ID != first.ID || string(r.Job.Args) != `{"x":1}` {
			t.Errorf("duplicate = %+v, job %+v; want existing job %d", r, r.Job, first.ID)
		}
	}
	n, err := d.InsertBulk(testCtx(t), []*driver.InsertParams{q, job(`{}`)})
	if err != nil || n != 1 {
		t.Errorf("InsertBulk with a duplicate = %d, %v; want 1", n, err)
	}
}

func TestInsertBulkCounts(t *testing.T) {
	d := openTest(t)
	insertN(t, d, 500)
	if n, err := d.InsertBulk(testCtx(t), nil); err != nil || n != 0 {
		t.Errorf("InsertBulk(nil) = %d, %v", n, err)
	}
	jobs, err := d.ListJobs(testCtx(t), &leasehold.ListParams{Limit: 1000})
	if err != nil || len(jobs) != 500 {
		t.Fatalf("ListJobs = %d jobs, %v; want 500", len(jobs), err)
	}
}

func TestInsertInTx(t *testing.T) {
	d := openTest(t)
	ctx := testCtx(t)
	insert(t, d, job(`{}`)) // the statements are now prepared: use them in tx
	for _, commit := range []bool{true, false} {
		tx, err := d.DB().BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := d.Insert(ctx, tx, []*driver.InsertParams{job(`{}`)})
		if err != nil {
			t.Fatalf("Insert in tx: %v", err)
		}
		id := res[0].Job.ID
		if commit {
			err = tx.Commit()
		} else {
			err = tx.Rollback()
		}
		if err != nil {
			t.Fatal(err)
		}
		_, err = d.GetJob(ctx, id)
		if commit && err != nil {
			t.Errorf("committed job %d: %v", id, err)
		}
		if !commit && !errors.Is(err, leasehold.ErrJobNotFound) {
			t.Errorf("rolled back job %d: err = %v, want ErrJobNotFound", id, err)
		}
	}
}

func TestUnsupportedTx(t *testing.T) {
	d := openTest(t)
	ctx := testCtx(t)
	for _, tx := range []any{"tx", &sql.DB{}, struct{}{}} {
		if _, err := d.Insert(ctx, tx, []*driver.InsertParams{job(`{}`)}); !errors.Is(err, leasehold.ErrUnsupportedTx) {
			t.Errorf("Insert(%T) err = %v, want ErrUnsupportedTx", tx, err)
		}
		_, err := d.Finish(ctx, tx, []*driver.FinishParams{{ID: 1, Transition: transition(leasehold.OutcomeCompleted, "")}})
		if !errors.Is(err, leasehold.ErrUnsupportedTx) {
			t.Errorf("Finish(%T) err = %v, want ErrUnsupportedTx", tx, err)
		}
	}
}

func TestInsertInvalidJSON(t *testing.T) {
	d := openTest(t)
	if _, err := d.Insert(testCtx(t), nil, []*driver.InsertParams{job(`{nope`)}); err == nil {
		t.Fatal("Insert with invalid JSON args succeeded")
	}
}
