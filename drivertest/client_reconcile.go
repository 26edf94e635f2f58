package drivertest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
	"github.com/leasehold/leasehold/internal/statemachine"
)

// reconcileQueues configures queue "pay" to reconcile into queue "rec".
func reconcileQueues(c *leasehold.Config) {
	c.Queues = map[string]leasehold.QueueConfig{
		"pay": {Reconcile: &leasehold.ReconcilePolicy{Queue: "rec"}},
		"rec": {},
	}
}

// deadLease inserts a "test" job in queue, claims it as a worker "dead"
// that will never renew it, and records checkpoints under that lease.
func (e *clientEnv) deadLease(queue string, checkpoints ...string) *leasehold.JobRow {
	e.Helper()
	res, err := e.d.Insert(e.ctx, nil, []*driver.InsertParams{{Kind: "test", Queue: queue, Args: []byte(`{"n":1}`), MaxAttempts: 3}})
	if err != nil {
		e.Fatalf("Insert: %v", err)
	}
	j, err := e.d.ClaimByID(e.ctx, &driver.ClaimByIDParams{ID: res[0].Job.ID, Owner: "dead", TTL: 300 * time.Millisecond})
	if err != nil || j == nil {
		e.Fatalf("ClaimByID = %v, %v", j, err)
	}
	for _, name := range checkpoints {
		p := &driver.CheckpointParams{Lease: driver.FenceParams{ID: j.ID, Owner: "dead", Attempt: j.Attempt}, Name: name}
		if _, err := e.d.Checkpoint(e.ctx, nil, p); err != nil {
			e.Fatalf("Checkpoint: %v", err)
		}
	}
	return j
}

// testClientReconcile: in a queue configured with Reconcile, a job whose
// worker died is not taken over by claims; the client's watcher moves it
// to reconciling with a reconcile job, whose handler reads the dead
// attempt's checkpoints and resolves it: completed when the checkpoint
// says the outside call happened (never run again), retried otherwise
// (run again, then completed). The history keeps lease_expired and
// records each resolution.
func testClientReconcile(e *clientEnv) {
	charged := e.deadLease("pay", "charge-sent", "charged")
	unsent := e.deadLease("pay", "charge-sent")
	var (
		mu   sync.Mutex
		runs = map[int64]int{}
	)
	ws := e.workers(func(ctx context.Context, job *leasehold.Job[testArgs]) error {
		mu.Lock()
		runs[job.ID]++
		mu.Unlock()
		return nil
	})
	if err := leasehold.AddWorker(ws, leasehold.WorkFunc[leasehold.ReconcileArgs](chargeReconciler)); err != nil {
		e.Fatalf("AddWorker: %v", err)
	}
	e.newClient(e.d, ws, reconcileQueues)
	done := e.waitState(charged.ID, leasehold.StateCompleted, 30*time.Second)
	again := e.waitState(unsent.ID, leasehold.StateCompleted, 30*time.Second)
	mu.Lock()
	defer mu.Unlock()
	if runs[charged.ID] != 0 || done.Attempt != 1 {
		e.Errorf("charged job: %d handler runs, attempt %d; want it completed by its reconciler alone", runs[charged.ID], done.Attempt)
	}
	if runs[unsent.ID] != 1 || again.Attempt != 2 {
		e.Errorf("unsent job: %d handler runs, attempt %d; want it run once more after the reconciler's retry", runs[unsent.ID], again.Attempt)
	}
	e.checkResolution(charged.ID, 1, "completed by reconcile job", "provider charged")
	e.checkResolution(unsent.ID, 2, "retried by reconcile job", "no charge at the provider")
}

// chargeReconciler resolves the job its reconcile job names by the dead
// attempt's checkpoints: completed when the last one is "charged" (the
// provider charged), retried otherwise. A job no longer reconciling is
// left alone.
func chargeReconciler(ctx context.Context, job *leasehold.Job[leasehold.ReconcileArgs]) error {
	c := leasehold.ClientFromContext(ctx)
	cps, err := c.Checkpoints(ctx, job.Args.JobID)
	if err != nil {
		return err
	}
	r := leasehold.Resolution{Action: leasehold.ResolveRetry, Note: "no charge at the provider"}
	if len(cps) > 0 && cps[len(cps)-1].Name == "charged" {
		r = leasehold.Resolution{Action: leasehold.ResolveComplete, Note: "provider charged"}
	}
	return ignoreNotReconciling(c.ResolveReconcile(ctx, job.JobRow, r))
}

// ignoreNotReconciling is err, or nil for ErrNotReconciling: the job was
// resolved by an earlier run of its reconcile job.
func ignoreNotReconciling(err error) error {
	if errors.Is(err, leasehold.ErrNotReconciling) {
		return nil
	}
	return err
}

// testResolutionNoteBounded: a reconciler's note (a provider's response
// body, say) is cut to MaxErrorText in the job's last error and in its
// history, as a handler's error is, however long it is.
func testResolutionNoteBounded(e *clientEnv) {
	dead := e.deadLease("pay")
	note := strings.Repeat("provider said: charged. ", 40<<10) // about 1 MB
	var cRef *leasehold.Client
	ws := e.workers(func(context.Context, *leasehold.Job[testArgs]) error { return nil })
	err := leasehold.AddWorker(ws, leasehold.WorkFunc[leasehold.ReconcileArgs](func(ctx context.Context, job *leasehold.Job[leasehold.ReconcileArgs]) error {
		return cRef.ResolveReconcile(ctx, job.JobRow, leasehold.Resolution{Action: leasehold.ResolveStuck, Note: note})
	}))
	if err != nil {
		e.Fatalf("AddWorker: %v", err)
	}
	cRef = e.newClient(e.d, ws, reconcileQueues)
	row := e.waitState(dead.ID, leasehold.StateStuck, 30*time.Second)
	limit := leasehold.MaxErrorText
	if n := len(row.LastError); n > limit || !strings.HasSuffix(row.LastError, "… (truncated)") {
		e.Errorf("last error of %d bytes (ends %q); want it cut to %d", n, row.LastError[max(0, n-20):], limit)
	}
	h := e.history(dead.ID)
	if len(h) != 1 || len(h[0].Resolution) > limit+200 {
		e.Errorf("history %d attempts, resolution of %d bytes; want one, cut near %d", len(h), len(h[0].Resolution), limit)
	}
}

// checkResolution checks that job id's history has n attempts, the first
// ended lease_expired with a resolution holding each of parts.
func (e *clientEnv) checkResolution(id int64, n int, parts ...string) {
	e.Helper()
	h := e.history(id)
	if len(h) != n || h[0].Outcome != leasehold.OutcomeLeaseExpired {
		e.Errorf("job %d history %s; want %d attempts, the first lease_expired", id, fmtHistory(h), n)
		return
	}
	for _, p := range parts {
		if !strings.Contains(h[0].Resolution, p) {
			e.Errorf("job %d resolution %q, want it to say %q", id, h[0].Resolution, p)
		}
	}
}

// testClientResolveLostLease: a reconciler whose lease expired and was
// taken over while it ran (its heartbeats cut off) is refused with
// ErrLeaseLost when it resolves, and the job stays reconciling.
func testClientResolveLostLease(e *clientEnv) {
	orig := e.deadLease("pay")
	waitPast := &tc{T: e.T, ctx: e.ctx, h: e.h, d: e.d}
	waitPast.waitExpired(orig)
	decide := statemachine.PolicyRescuer(statemachine.Policy{Reconcile: map[string]statemachine.ReconcileTarget{
		"pay": {Kind: leasehold.ReconcileKind, Queue: "rec", MaxAttempts: 3}}})
	res, err := e.d.RescueExpired(e.ctx, &driver.RescueParams{Decide: decide})
	if err != nil || len(res) != 1 || res[0].ReconcileJobID == 0 {
		e.Fatalf("RescueExpired = %+v, %v; want the job reconciling", res, err)
	}
	fd := &faultDriver{Driver: e.d}
	g, resolved := newGate(), make(chan error, 1)
	var cRef *leasehold.Client
	ws := leasehold.NewWorkers()
	err = leasehold.AddWorker(ws, leasehold.WorkFunc[leasehold.ReconcileArgs](func(ctx context.Context, job *leasehold.Job[leasehold.ReconcileArgs]) error {
		g.markStarted()
		fd.cutOff.Store(true)
		<-g.release
		resolved <- cRef.ResolveReconcile(context.WithoutCancel(ctx), job.JobRow, leasehold.Resolution{Action: leasehold.ResolveComplete})
		return nil
	}))
	if err != nil {
		e.Fatalf("AddWorker: %v", err)
	}
	cRef = e.newClient(fd, ws, func(c *leasehold.Config) {
		c.Queues = map[string]leasehold.QueueConfig{"rec": {FlagStuck: true}}
		c.DisableWatcher = true
	})
	e.waitGate(g.started, "the reconciler to start")
	rec, err := e.d.GetJob(e.ctx, res[0].ReconcileJobID)
	if err != nil {
		e.Fatalf("GetJob: %v", err)
	}
	waitPast.waitExpired(rec)
	waitPast.claimID(e.d, rec.ID, "thief", liveTTL, true)
	close(g.release)
	select {
	case err := <-resolved:
		if !errors.Is(err, leasehold.ErrLeaseLost) {
			e.Errorf("ResolveReconcile by a reconciler whose lease was taken over = %v, want ErrLeaseLost", err)
		}
	case <-time.After(30 * time.Second):
		e.Fatal("the reconciler did not resolve")
	}
	if j := waitPast.get(orig.ID); j.State != leasehold.StateReconciling {
		e.Errorf("job after a refused resolution: %s, want reconciling", j.State)
	}
}

// testHandlerFenceAndCheckpoint: a handler records a checkpoint on its
// own and one in its business transaction, asserts its lease there with
// FenceTx and completes in it; the client's reader returns both. Outside
// a handler FenceTx and Checkpoint refuse with ErrNotInHandler; a bad
// checkpoint name, and a resolution from a job that is not a reconcile
// job, with ErrInvalidArgs.
func testHandlerFenceAndCheckpoint(e *clientEnv) {
	for _, kind := range e.h.TxKinds {
		e.Run(kind.Name, func(t *testing.T) {
			e := &clientEnv{T: t, h: e.h, d: e.h.Open(t), ctx: e.ctx}
			var cRef *leasehold.Client
			checks := make(chan error, 1)
			c := e.newClient(e.d, e.workers(func(ctx context.Context, job *leasehold.Job[testArgs]) error {
				err := handlerFenced(ctx, cRef, kind, t, e.d, job)
				checks <- err
				return err
			}), nil)
			cRef = c
			res, err := c.Insert(e.ctx, testArgs{N: 1}, nil)
			if err != nil {
				t.Fatalf("Insert: %v", err)
			}
			e.waitGate(chanDone(checks, t), "the handler")
			e.waitState(res.Job.ID, leasehold.StateCompleted, 30*time.Second)
			cps, err := c.Checkpoints(e.ctx, res.Job.ID)
			if err != nil || len(cps) != 2 || cps[0].Name != "charge-sent" || cps[1].Name != "charged" || cps[1].Attempt != 1 {
				t.Errorf("Checkpoints = %v, %v; want charge-sent then charged, attempt 1", cps, err)
			}
			tx, _, rollback := kind.Begin(t, e.d)
			defer func() { _ = rollback() }()
			if err := leasehold.FenceTx(e.ctx, tx); !errors.Is(err, leasehold.ErrNotInHandler) {
				t.Errorf("FenceTx outside a handler = %v, want ErrNotInHandler", err)
			}
			if _, err := leasehold.Checkpoint(e.ctx, "x", nil); !errors.Is(err, leasehold.ErrNotInHandler) {
				t.Errorf("Checkpoint outside a handler = %v, want ErrNotInHandler", err)
			}
		})
	}
}

// handlerFenced is the handler of testHandlerFenceAndCheckpoint.
func handlerFenced(ctx context.Context, c *leasehold.Client, kind TxKind, t *testing.T, d driver.Driver, job *leasehold.Job[testArgs]) error {
	if _, err := leasehold.Checkpoint(ctx, "charge-sent", map[string]string{"key": job.IdempotencyKey()}); err != nil {
		return err
	}
	if _, err := leasehold.Checkpoint(ctx, "bad name", nil); !errors.Is(err, leasehold.ErrInvalidArgs) {
		return fmt.Errorf("a checkpoint with a bad name: %v, want ErrInvalidArgs", err)
	}
	if err := c.ResolveReconcile(ctx, job.JobRow, leasehold.Resolution{Action: leasehold.ResolveComplete}); !errors.Is(err, leasehold.ErrInvalidArgs) {
		return fmt.Errorf("a resolution from a job that reconciles nothing: %v, want ErrInvalidArgs", err)
	}
	tx, commit, rollback := kind.Begin(t, d)
	if err := leasehold.FenceTx(ctx, tx); err != nil {
		_ = rollback()
		return err
	}
	if _, err := leasehold.CheckpointTx(ctx, tx, "charged", map[string]bool{"ok": true}); err != nil {
		_ = rollback()
		return err
	}
	if err := c.CompleteTx(ctx, tx, job.JobRow); err != nil {
		_ = rollback()
		return err
	}
	return commit()
}
