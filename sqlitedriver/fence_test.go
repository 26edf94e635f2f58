package sqlitedriver

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/statemachine"
	"github.com/leasehold/leasehold/internal/testdb"
)

// TestFenceJudgesAfterTheWriteLock: a fence in a caller's transaction
// begun DEFERRED (a Driver from New on a database opened without
// _txlock=immediate) waits for the write lock when another connection
// holds it. The lease must be judged by the clock once the lock is won,
// not by one read before the wait: a lease that expired meanwhile is lost.
func TestFenceJudgesAfterTheWriteLock(t *testing.T) {
	path, caller, d := callerDriver(t)
	ctx := testCtx(t)
	insert(t, d, job(`{}`))
	const ttl = time.Second
	row := claim(t, d, "w", 1, ttl, false)[0]

	release := holdWriteLock(t, openDB(t, path), 2*ttl)
	tx, err := caller.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	err = d.FenceTx(ctx, tx, &driver.FenceParams{ID: row.ID, Owner: "w", Attempt: row.Attempt})
	if err := <-release; err != nil {
		t.Fatal(err)
	}
	if !errors.Is(err, leasehold.ErrLeaseLost) {
		t.Fatalf("FenceTx that won the write lock %v after the claim, past the lease's %v TTL: %v; want ErrLeaseLost",
			2*ttl, ttl, err)
	}
}

// openDB opens path as a caller's own database, in WAL mode with a busy
// timeout long enough for the waits of these tests and no _txlock (its
// transactions begin DEFERRED), closed with the test.
func openDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)&_pragma=journal_mode(wal)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// holdWriteLock takes db's write lock on one connection, and gives it up
// (writing nothing) after d; the channel reports when it has.
func holdWriteLock(t *testing.T, db *sql.DB, d time.Duration) <-chan error {
	t.Helper()
	ctx := testCtx(t)
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		time.Sleep(d)
		_, err := conn.ExecContext(context.Background(), "ROLLBACK")
		done <- errors.Join(err, conn.Close())
	}()
	return done
}

// TestCheckpointStampsAfterTheWriteLock: a checkpoint written in a
// caller's transaction begun DEFERRED, which waits for the write lock
// another connection holds, is stamped once the lock is won, not with a
// clock read before the wait.
func TestCheckpointStampsAfterTheWriteLock(t *testing.T) {
	const wait = 300 * time.Millisecond
	path, caller, d := callerDriver(t)
	ctx := testCtx(t)
	insert(t, d, job(`{}`))
	held := claim(t, d, "w", 1, time.Minute, false)[0]
	before, err := d.Now(ctx)
	if err != nil {
		t.Fatal(err)
	}
	release := holdWriteLock(t, openDB(t, path), wait)
	tx, err := caller.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	row, err := d.Checkpoint(ctx, tx, &driver.CheckpointParams{
		Lease: driver.FenceParams{ID: held.ID, Owner: "w", Attempt: held.Attempt}, Name: "charge-sent"})
	if err != nil {
		t.Fatalf("Checkpoint: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-release; err != nil {
		t.Fatal(err)
	}
	if got := row.WrittenAt.Sub(before); got < wait-50*time.Millisecond {
		t.Errorf("checkpoint stamped %v after the clock read before a %v wait for the write lock; want a time after the wait", got, wait)
	}
}

// TestCallerTxStampsAfterTheWriteLock: an insert, and a finish, each in
// a caller's transaction begun DEFERRED, which waits for the write lock
// another connection holds, stamp the job's run_at (finished_at) once the
// lock is won, not with a clock read before the wait.
func TestCallerTxStampsAfterTheWriteLock(t *testing.T) {
	const wait = 300 * time.Millisecond
	path, caller, d := callerDriver(t)
	ctx := testCtx(t)
	held := claimOne(t, d, 3)
	// Each write returns the time it stamped on its job, or zero for one
	// read once the transaction has committed.
	writes := map[string]func(tx *sql.Tx) time.Time{
		"an insert's run_at": func(tx *sql.Tx) time.Time {
			res, err := d.Insert(ctx, tx, []*driver.InsertParams{job(`{}`)})
			if err != nil {
				t.Fatalf("Insert: %v", err)
			}
			return res[0].Job.RunAt
		},
		"a finish's finished_at": func(tx *sql.Tx) time.Time {
			done, err := d.Finish(ctx, tx, []*driver.FinishParams{{ID: held.ID, Owner: "w", Attempt: held.Attempt,
				Transition: statemachine.Finish(statemachine.Ending{Outcome: leasehold.OutcomeCompleted})}})
			if err != nil || len(done) != 1 {
				t.Fatalf("Finish = %v, %v; want job %d", done, err, held.ID)
			}
			return time.Time{}
		},
	}
	for what, write := range writes {
		before, err := d.Now(ctx)
		if err != nil {
			t.Fatal(err)
		}
		release := holdWriteLock(t, openDB(t, path), wait)
		tx, err := caller.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		at := write(tx)
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		if err := <-release; err != nil {
			t.Fatal(err)
		}
		if at.IsZero() {
			at = mustGet(t, d, held.ID).FinishedAt
		}
		if got := at.Sub(before); got < wait-50*time.Millisecond {
			t.Errorf("%s is %v after the clock read before a %v wait for the write lock; want a time after the wait", what, got, wait)
		}
	}
}

// callerDriver migrates a new database file and returns its path, a
// database handle on it as a caller's (transactions begun DEFERRED), and
// a Driver from New on that handle.
func callerDriver(t *testing.T) (string, *sql.DB, *Driver) {
	t.Helper()
	path := testdb.SQLitePath(t)
	openPath(t, path) // migrated
	caller := openDB(t, path)
	d, err := New(caller)
	if err != nil {
		t.Fatal(err)
	}
	return path, caller, d
}
