package sqlitedriver

import (
	"database/sql"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/statemachine"
)

// TestTxFromAnotherDBOnTheFile: the calls that take a caller's
// transaction work in a *sql.Tx begun on the application's own *sql.DB
// opened on the same file with DSN, both before the Driver has prepared
// its statements and after its own transactions have (statements of its
// *sql.DB, which database/sql refuses in a transaction of another), and
// what they write commits with the application's transaction.
func TestTxFromAnotherDBOnTheFile(t *testing.T) {
	path := t.TempDir() + "/jobs.db"
	other := openPath(t, path) // migrates, and sets up jobs for d
	d, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	app, err := sql.Open("sqlite", DSN(path))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { app.Close() })

	// First use: d has run no transaction of its own, so nothing is
	// prepared; the leases come from another Driver.
	appTxCalls(t, d, other, app, "before the driver's own transactions")

	// The same calls in d's own transactions prepare their statements.
	ctx := testCtx(t)
	held := claimOne(t, d, 3)
	if _, err := d.Checkpoint(ctx, nil, &driver.CheckpointParams{Lease: fenceOf(held), Name: "own"}); err != nil {
		t.Fatalf("Checkpoint: %v", err)
	}
	if _, err := d.Finish(ctx, nil, []*driver.FinishParams{completion(held)}); err != nil {
		t.Fatalf("Finish: %v", err)
	}
	if _, err := d.Resolve(ctx, nil, reconcilingJob(t, d, statemachine.ResolveComplete)); err != nil {
		t.Fatalf("Resolve: %v", err)
	}

	appTxCalls(t, d, d, app, "after the driver's own transactions")
}

// appTxCalls runs Insert, FenceTx, Checkpoint, Finish and Resolve of d in
// one transaction of app, on a job and a reconciling job that setup
// (a Driver on the same file) prepares, commits it, and checks on d that
// each write took effect.
func appTxCalls(t *testing.T, d, setup *Driver, app *sql.DB, when string) {
	t.Helper()
	ctx := testCtx(t)
	held := claimOne(t, setup, 3)
	resolve := reconcilingJob(t, setup, statemachine.ResolveComplete)
	tx, err := app.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	res, err := d.Insert(ctx, tx, []*driver.InsertParams{job(`{"app":true}`)})
	if err != nil {
		t.Fatalf("%s: Insert in the application's transaction: %v", when, err)
	}
	lease := fenceOf(held)
	if err := d.FenceTx(ctx, tx, &lease); err != nil {
		t.Fatalf("%s: FenceTx in the application's transaction: %v", when, err)
	}
	if _, err := d.Checkpoint(ctx, tx, &driver.CheckpointParams{Lease: lease, Name: "app"}); err != nil {
		t.Fatalf("%s: Checkpoint in the application's transaction: %v", when, err)
	}
	if done, err := d.Finish(ctx, tx, []*driver.FinishParams{completion(held)}); err != nil || len(done) != 1 {
		t.Fatalf("%s: Finish in the application's transaction = %v, %v; want job %d", when, done, err, held.ID)
	}
	if _, err := d.Resolve(ctx, tx, resolve); err != nil {
		t.Fatalf("%s: Resolve in the application's transaction: %v", when, err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatalf("%s: commit: %v", when, err)
	}
	if j := mustGet(t, d, res[0].Job.ID); j.State != leasehold.StatePending {
		t.Errorf("%s: inserted job is %s, want pending", when, j.State)
	}
	if j := mustGet(t, d, held.ID); j.State != leasehold.StateCompleted {
		t.Errorf("%s: finished job is %s, want completed", when, j.State)
	}
	if j := mustGet(t, d, resolve.JobID); j.State != leasehold.StateCompleted {
		t.Errorf("%s: resolved job is %s, want completed", when, j.State)
	}
	cps, err := d.Checkpoints(ctx, held.ID)
	if err != nil || len(cps) != 1 || cps[0].Name != "app" {
		t.Errorf("%s: checkpoints = %+v, %v; want the one named app", when, cps, err)
	}
}

// fenceOf returns the fence of j's lease, held by "w".
func fenceOf(j *leasehold.JobRow) driver.FenceParams {
	return driver.FenceParams{ID: j.ID, Owner: "w", Attempt: j.Attempt}
}

// completion completes j's lease, held by "w".
func completion(j *leasehold.JobRow) *driver.FinishParams {
	return &driver.FinishParams{ID: j.ID, Owner: "w", Attempt: j.Attempt,
		Transition: statemachine.Finish(statemachine.Ending{Outcome: leasehold.OutcomeCompleted})}
}

// TestTxFromAnotherDBWaitsForTheDriversWriter: a transaction of another
// *sql.DB on the file, begun while the Driver's own write transaction
// holds the write lock, waits for it (BEGIN IMMEDIATE, busy timeout) and
// then writes; and the Driver's own write waits for the application's
// transaction the same way, rather than failing.
func TestTxFromAnotherDBWaitsForTheDriversWriter(t *testing.T) {
	path := t.TempDir() + "/jobs.db"
	d := openPath(t, path)
	app, err := sql.Open("sqlite", DSN(path))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { app.Close() })
	ctx := testCtx(t)
	insert(t, d, job(`{}`)) // prepares the driver's statements

	tx, err := app.BeginTx(ctx, nil) // takes the write lock
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := d.Insert(ctx, tx, []*driver.InsertParams{job(`{"app":1}`)}); err != nil {
		t.Fatalf("Insert in the application's transaction: %v", err)
	}
	own := make(chan error, 1)
	go func() {
		_, err := d.Insert(ctx, nil, []*driver.InsertParams{job(`{"own":1}`)})
		own <- err
	}()
	select {
	case err := <-own:
		t.Fatalf("the driver's own insert returned (%v) while the application's transaction held the write lock", err)
	case <-time.After(200 * time.Millisecond):
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if err := <-own; err != nil {
		t.Fatalf("the driver's own insert after the application's commit: %v", err)
	}
	if got := countJobs(t, d); got != 3 {
		t.Errorf("%d jobs, want 3", got)
	}
}

// countJobs counts the jobs of d's file.
func countJobs(t *testing.T, d *Driver) int {
	t.Helper()
	var n int
	if err := d.DB().QueryRowContext(testCtx(t), `SELECT count(*) FROM leasehold_jobs`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}
