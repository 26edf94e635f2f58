package leasehold_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/statemachine"
	"github.com/leasehold/leasehold/pgdriver/pgtest"
	"github.com/leasehold/leasehold/sqlitedriver/sqlitetest"
)

// resolveEnv is one resolution test on a real, fresh database.
type resolveEnv struct {
	*testing.T
	ctx context.Context
	d   driver.Driver
	// begin begins a caller transaction on d's database, rolled back at
	// cleanup if still open.
	begin func() (tx any, commit, rollback func() error)
}

// eachResolveDriver runs test on SQLite and on PostgreSQL (skipped
// without LEASEHOLD_TEST_DATABASE_URL, failed instead when
// LEASEHOLD_REQUIRE_POSTGRES=1), each on a fresh database.
func eachResolveDriver(t *testing.T, test func(e *resolveEnv)) {
	t.Run("sqlite", func(t *testing.T) {
		d := sqlitetest.Open(t)
		test(newResolveEnv(t, d, func(ctx context.Context) (any, func() error, func() error, error) {
			tx, err := d.DB().BeginTx(ctx, nil)
			if err != nil {
				return nil, nil, nil, err
			}
			return tx, tx.Commit, tx.Rollback, nil
		}))
	})
	t.Run("postgres", func(t *testing.T) {
		url := pgtest.URL(t)
		d := pgtest.OpenURL(t, url)
		pool, err := pgxpool.New(t.Context(), url)
		if err != nil {
			t.Fatalf("pgxpool.New: %v", err)
		}
		t.Cleanup(pool.Close)
		test(newResolveEnv(t, d, func(ctx context.Context) (any, func() error, func() error, error) {
			tx, err := pool.Begin(ctx)
			if err != nil {
				return nil, nil, nil, err
			}
			return tx, func() error { return tx.Commit(ctx) }, func() error { return tx.Rollback(ctx) }, nil
		}))
	})
}

// newResolveEnv returns the env of t on d, whose caller transactions
// begin does.
func newResolveEnv(t *testing.T, d driver.Driver, begin func(context.Context) (any, func() error, func() error, error)) *resolveEnv {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	e := &resolveEnv{T: t, ctx: ctx, d: d}
	e.begin = func() (any, func() error, func() error) {
		tx, commit, rollback, err := begin(context.WithoutCancel(ctx))
		if err != nil {
			t.Errorf("begin a caller transaction: %v", err)
			return nil, func() error { return err }, func() error { return err }
		}
		t.Cleanup(func() { _ = rollback() })
		return tx, commit, rollback
	}
	return e
}

// paymentArgs are the args of the jobs the tests reconcile.
type paymentArgs struct{}

// Kind implements leasehold.Args.
func (paymentArgs) Kind() string { return "payment" }

// reconciling inserts n payment jobs in queue "pay", claims each as a
// worker "dead" that never renews its lease, and once the leases have
// expired moves them to reconciling, each with its reconcile job in queue
// "rec", as a client's watcher would. It returns the payment jobs.
func (e *resolveEnv) reconciling(n int) []*leasehold.JobRow {
	e.Helper()
	ids := map[int64]bool{}
	for range n {
		res, err := e.d.Insert(e.ctx, nil, []*driver.InsertParams{{Kind: "payment", Queue: "pay", Args: []byte(`{}`), MaxAttempts: 3}})
		if err != nil {
			e.Fatalf("Insert: %v", err)
		}
		j, err := e.d.ClaimByID(e.ctx, &driver.ClaimByIDParams{ID: res[0].Job.ID, Owner: "dead", TTL: 100 * time.Millisecond})
		if err != nil || j == nil {
			e.Fatalf("ClaimByID = %v, %v", j, err)
		}
		ids[j.ID] = true
	}
	decide := statemachine.PolicyRescuer(statemachine.Policy{Reconcile: map[string]statemachine.ReconcileTarget{
		"pay": {Kind: leasehold.ReconcileKind, Queue: "rec", MaxAttempts: 3}}})
	moved := 0
	e.waitFor("the dead payments to be reconciling", func() bool {
		res, err := e.d.RescueExpired(e.ctx, &driver.RescueParams{Decide: decide, Queues: []string{"pay"}})
		if err != nil {
			e.Fatalf("RescueExpired: %v", err)
		}
		moved += len(res)
		return moved == n
	})
	out := make([]*leasehold.JobRow, 0, n)
	for id := range ids {
		out = append(out, e.job(id))
	}
	return out
}

// client starts a client on d (e.d when nil) that works queue "rec" with
// reconcile, and queue "pay", and stops it at cleanup.
func (e *resolveEnv) client(d driver.Driver, reconcile func(ctx context.Context, c *leasehold.Client, job *leasehold.Job[leasehold.ReconcileArgs]) error) *leasehold.Client {
	e.Helper()
	ws := leasehold.NewWorkers()
	if err := leasehold.AddWorker(ws, leasehold.WorkFunc[paymentArgs](func(context.Context, *leasehold.Job[paymentArgs]) error { return nil })); err != nil {
		e.Fatalf("AddWorker: %v", err)
	}
	err := leasehold.AddWorker(ws, leasehold.WorkFunc[leasehold.ReconcileArgs](func(ctx context.Context, job *leasehold.Job[leasehold.ReconcileArgs]) error {
		return reconcile(ctx, leasehold.ClientFromContext(ctx), job)
	}))
	if err != nil {
		e.Fatalf("AddWorker: %v", err)
	}
	if d == nil {
		d = e.d
	}
	c, err := leasehold.NewClient(leasehold.Config{Driver: d, Workers: ws, PollInterval: 20 * time.Millisecond,
		ShutdownTimeout: 5 * time.Second, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		Queues: map[string]leasehold.QueueConfig{"pay": {Reconcile: &leasehold.ReconcilePolicy{Queue: "rec"}}, "rec": {}}})
	if err != nil {
		e.Fatalf("NewClient: %v", err)
	}
	if err := c.Start(e.ctx); err != nil {
		e.Fatalf("Start: %v", err)
	}
	e.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		_ = c.Stop(ctx)
	})
	return c
}

// job returns job id as stored.
func (e *resolveEnv) job(id int64) *leasehold.JobRow {
	e.Helper()
	j, err := e.d.GetJob(e.ctx, id)
	if err != nil {
		e.Fatalf("GetJob(%d): %v", id, err)
	}
	return j
}

// waitFor polls cond until it holds, failing the test after 30 s.
func (e *resolveEnv) waitFor(what string, cond func() bool) {
	e.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			e.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitReconcilersDone waits until the reconcile jobs of the payments have
// all completed.
func (e *resolveEnv) waitReconcilersDone(n int) {
	e.Helper()
	e.waitFor("the reconcile jobs to complete", func() bool {
		jobs, err := e.d.ListJobs(e.ctx, &leasehold.ListParams{Kind: leasehold.ReconcileKind,
			States: []leasehold.JobState{leasehold.StateCompleted}})
		if err != nil {
			e.Fatalf("ListJobs: %v", err)
		}
		return len(jobs) == n
	})
}

// checkState checks that job id is in state.
func (e *resolveEnv) checkState(what string, id int64, state leasehold.JobState) {
	e.Helper()
	if j := e.job(id); j.State != state {
		e.Errorf("%s (job %d): %s, want %s", what, id, j.State, state)
	}
}

// waitErr returns the first error sent on errs.
func waitErr(e *resolveEnv, errs <-chan error) error {
	e.Helper()
	select {
	case err := <-errs:
		return err
	case <-time.After(30 * time.Second):
		e.Fatal("the reconciler did not resolve")
		return nil
	}
}

// heldReport is a driver whose first ListAttempts of job id waits, once
// it has closed reached, until release is closed: the client reads the
// history there, after its reconcile job's handler has returned, to tell
// whether the handler's resolutions in transactions committed.
type heldReport struct {
	driver.Driver
	id               int64
	once             sync.Once
	reached, release chan struct{}
}

// ListAttempts implements driver.Driver.
func (h *heldReport) ListAttempts(ctx context.Context, id int64) ([]*leasehold.Attempt, error) {
	if id == h.id {
		h.once.Do(func() {
			close(h.reached)
			select {
			case <-h.release:
			case <-ctx.Done():
			}
		})
	}
	return h.Driver.ListAttempts(ctx, id)
}

// TestResolveAfterHandlerReturnedRefused: a resolution made under a
// reconcile job's lease once its handler has returned (by a goroutine the
// handler left running), while the client still holds the lease (it is
// reporting the handler's resolutions, before the outcome is submitted),
// in a transaction or on its own, is refused with ErrLeaseLost and writes
// nothing; nothing waits in the client for a handler that will never
// return again.
func TestResolveAfterHandlerReturnedRefused(t *testing.T) {
	eachResolveDriver(t, func(e *resolveEnv) {
		a := e.reconciling(1)[0]
		hd := &heldReport{Driver: e.d, id: a.ID, reached: make(chan struct{}), release: make(chan struct{})}
		late := make(chan error, 2)
		c := e.client(hd, func(ctx context.Context, c *leasehold.Client, job *leasehold.Job[leasehold.ReconcileArgs]) error {
			// A resolution in a transaction that rolls back: the client
			// reads the history once the handler has returned.
			tx, _, rollback := e.begin()
			if err := c.ResolveReconcileTx(ctx, tx, job.JobRow, leasehold.Resolution{Action: leasehold.ResolveComplete}); err != nil {
				return errors.Join(err, rollback())
			}
			if err := rollback(); err != nil {
				return err
			}
			go func() {
				defer close(hd.release)
				<-hd.reached
				tx, commit, rollback := e.begin()
				err := c.ResolveReconcileTx(context.WithoutCancel(ctx), tx, job.JobRow, leasehold.Resolution{Action: leasehold.ResolveComplete})
				if err == nil {
					err = commit()
				} else {
					_ = rollback()
				}
				late <- err
				late <- c.ResolveReconcile(context.WithoutCancel(ctx), job.JobRow, leasehold.Resolution{Action: leasehold.ResolveComplete})
			}()
			return nil
		})
		if err := waitErr(e, late); !errors.Is(err, leasehold.ErrLeaseLost) {
			e.Errorf("ResolveReconcileTx after the handler returned = %v, want ErrLeaseLost", err)
		}
		if err := waitErr(e, late); !errors.Is(err, leasehold.ErrLeaseLost) {
			e.Errorf("ResolveReconcile after the handler returned = %v, want ErrLeaseLost", err)
		}
		e.waitReconcilersDone(1)
		e.checkState("the job resolved after its reconciler's handler returned", a.ID, leasehold.StateReconciling)
		if n, held := leasehold.WaitingTxResolutions(c); n != 0 || held != 0 {
			e.Errorf("after the handler returned: resolutions of %d leases waiting (held %d), want none", n, held)
		}
	})
}
