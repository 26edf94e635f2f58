package drivertest

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// RunClient runs the client-level invariants (workers, heartbeats, the
// watcher, shutdown, transactions) against the driver of h, as subtests.
func RunClient(t *testing.T, h Harness) {
	t.Helper()
	run := func(t *testing.T) {
		for _, tt := range clientTests {
			t.Run(tt.name, func(t *testing.T) { tt.fn(newClientEnv(t, h)) })
		}
	}
	if h.Name == "" {
		run(t)
		return
	}
	t.Run(h.Name, run)
}

var clientTests = []struct {
	name string
	fn   func(e *clientEnv)
}{
	{"CompetingWorkersDrainExactlyOnce", testCompetingWorkers},
	{"ExpiredLeaseTakenOverLateCompletionRefused", testTakeoverRefusesLateCompletion},
	{"LongJobKeptByHeartbeats", testLongJobKeptByHeartbeats},
	{"LostLeaseCancelsHandler", testLostLeaseCancelsHandler},
	{"UnrenewableLeaseCancelledBeforeExpiry", testWatchdogCancelsBeforeExpiry},
	{"GivenUpLeaseKeepsBudgetAndPolicy", testGiveUpKeepsBudgetAndPolicy},
	{"StopLeavesCutOffHandlerToWatcher", testStopLeavesCutOffHandlerToWatcher},
	{"StopLeavesReconcileQueueLeaseToWatcher", testStopLeavesReconcileQueueLeaseToWatcher},
	{"GivenUpLeaseInReconcileQueueLeftToWatcher", testGivenUpLeaseInReconcileQueueLeftToWatcher},
	{"GivenUpReconcileJobNeverFailed", testGivenUpReconcileJobNeverFailed},
	{"CancelBeforeHeartbeat", testClientCancelBeforeHeartbeat},
	{"CancelledAttemptReported", testClientCancelledAttemptReported},
	{"LateClaimReplyNeverStartsHandler", testLateClaimNeverRuns},
	{"LateClaimReplyReleased", testLateClaimReleased},
	{"CheckLeaseRefusesPastSafeWindow", testCheckLeaseRefusesPastSafeWindow},
	{"InsertTxRollbackLeavesNoJob", testInsertTxRollback},
	{"CompleteTxCommitsWithBusinessWrite", testCompleteTx},
	{"RolledBackCompleteTxChargesBudget", testRolledBackCompleteTxChargesBudget},
	{"NilTxRefused", testNilTxRefused},
	{"ForeignTxRefusedFirst", testForeignTxRefused},
	{"SecondCompleteTxSameTx", testSecondCompleteTxSameTx},
	{"CompletedTxThenHandlerError", testCompletedTxThenHandlerError},
	{"TypedCompleteTxNeedsNoClient", testTypedCompleteTx},
	{"TypedCompleteTxRefusesOtherDriver", testTypedCompleteTxOtherDriver},
	{"WatcherRequeuesFlagsAndFails", testWatcher},
	{"WatcherOwnQueuesOnly", testWatcherOwnQueuesOnly},
	{"LostClaimReplyReleased", testLostClaimReplyReleased},
	{"ShutdownReleasesLeases", testShutdownReleases},
	{"HandlerOutcomes", testHandlerOutcomes},
	{"OperatorCancelStopsRunningHandler", testOperatorCancelRunning},
	{"UnregisteredKindsLeftAlone", testUnregisteredKinds},
	{"NotifyWakesIdleWorkers", testNotifyWakesIdleWorkers},
	{"PausedQueueFinishesRunningJobs", testPausedQueueFinishesRunning},
	{"ResumedQueueClaimedPromptly", testResumedQueueClaimedPromptly},
	{"ResumeWakesOwnWorkers", testResumeWakesOwnWorkers},
	{"IdleQueuesPolledByProbe", testIdleQueuesPolledByProbe},
	{"BusyQueuesClaimedFairly", testBusyQueuesClaimedFairly},
	{"JobBeforeCursorClaimed", testJobBeforeCursorClaimed},
	{"JobBeforeCursorClaimedAtFullClaim", testJobBeforeCursorClaimedAtFullClaim},
	{"FollowUpsAfterLowPriorityJob", testFollowUpsAfterLowPriorityJob},
	{"PauseQueueBadName", testPauseQueueBadName},
	{"RetentionCleanerPurgesFinished", testRetentionCleaner},
	{"RetentionKeepsRecentlyFinished", testRetentionKeepsRecent},
	{"RefusedOutcomeHoldsBackOnlyItself", testRefusedOutcomeIsolated},
	{"LostClaimReclaimedRunsOnce", testLostClaimReclaimed},
	{"SettlingOutcomeNotRunAgain", testSettlingOutcomeNotRunAgain},
	{"LateStatementsLeaveOwnLease", testLateStatementsLeaveOwnLease},
	{"HeldRowHoldsBackOnlyItsLease", testHeldRowHoldsBackOnlyItsLease},
	{"GetJobShowsOneLease", testGetJobShowsOneLease},
	{"RefusedOutcomeAloneGivenUp", testRefusedOutcomeAlone},
	{"BadInputRefusedBeforeSQL", testBadInputRefused},
	{"PayloadLimitCountsNumbersWrittenOut", testPayloadWrittenOut},
	{"InsertMiddlewareInInsertingTx", testInsertMiddlewareInTx},
	{"WorkMiddlewareWrapsHandler", testWorkMiddlewareWrapsHandler},
	{"EventStreamAndStats", testEventStream},
	{"ThroughputRecorded", testThroughputRecorded},
	{"ThroughputRescuedByIdleClient", testThroughputRescuedByIdleClient},
	{"PeriodicClientsShareSlots", testPeriodicClientsShareSlots},
	{"PeriodicCatchUp", testPeriodicCatchUp},
	{"PeriodicCatchUpBeforeFirstSlot", testPeriodicCatchUpBeforeFirstSlot},
	{"ReconcileExpiredLease", testClientReconcile},
	{"ResolutionNoteBounded", testResolutionNoteBounded},
	{"ReconcilerGivingUpIsStuck", testReconcilerGivingUpIsStuck},
	{"ReconcileJobStuckByWatcherElsewhere", testReconcileJobStuckByWatcherElsewhere},
	{"ReconcileJobStuckByHandlerElsewhere", testReconcileJobStuckByHandlerElsewhere},
	{"ResolveByLostLeaseRefused", testClientResolveLostLease},
	{"ResolutionEventsAndStats", testResolutionEvents},
	{"ResolveReadsTheLeasesArgs", testResolveReadsTheLeasesArgs},
	{"ResolveIgnoresDelayOfComplete", testResolveIgnoresDelayOfComplete},
	{"ResolveAfterRolledBackTxReportedOnce", testResolveAfterRolledBackTxReportedOnce},
	{"CancelledDeadPaymentReconciled", testCancelledDeadPaymentReconciled},
	{"HandlerFenceAndCheckpoint", testHandlerFenceAndCheckpoint},
	{"KindTimeoutRetried", testKindTimeout},
	{"KindMaxAttempts", testKindMaxAttempts},
	{"KindRetryPolicy", testKindRetryPolicy},
	{"UniqueWhileUnfinishedThroughClient", testUniqueThroughClient},
}

// clientEnv is one client-level test: a driver on a fresh database.
type clientEnv struct {
	*testing.T
	h   Harness
	d   driver.Driver
	ctx context.Context
}

func newClientEnv(t *testing.T, h Harness) *clientEnv {
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	t.Cleanup(cancel)
	return &clientEnv{T: t, h: h, d: h.Open(t), ctx: ctx}
}

// quietLogger discards the client's operational logs in tests.
func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// newClient builds a client on d with fast test timings, applies tweak,
// starts it (a client without workers runs only its maintenance), and
// stops it at cleanup.
func (e *clientEnv) newClient(d driver.Driver, ws *leasehold.Workers, tweak func(*leasehold.Config)) *leasehold.Client {
	e.Helper()
	cfg := leasehold.Config{
		Driver: d, Workers: ws, LeaseTTL: 2 * time.Second, PollInterval: 20 * time.Millisecond,
		WatcherInterval: 100 * time.Millisecond, ShutdownTimeout: 5 * time.Second, Logger: quietLogger(),
	}
	if tweak != nil {
		tweak(&cfg)
	}
	c, err := leasehold.NewClient(cfg)
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

// waitFor polls cond until it holds, failing the test after timeout.
func (e *clientEnv) waitFor(what string, timeout time.Duration, cond func() bool) {
	e.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			e.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// waitState waits until job id is in state.
func (e *clientEnv) waitState(id int64, state leasehold.JobState, timeout time.Duration) *leasehold.JobRow {
	e.Helper()
	var row *leasehold.JobRow
	e.waitFor("job to reach "+string(state), timeout, func() bool {
		var err error
		row, err = e.d.GetJob(e.ctx, id)
		if err != nil {
			e.Fatalf("GetJob: %v", err)
		}
		return row.State == state
	})
	return row
}

func (e *clientEnv) history(id int64) []*leasehold.Attempt {
	e.Helper()
	as, err := e.d.ListAttempts(e.ctx, id)
	if err != nil {
		e.Fatalf("ListAttempts: %v", err)
	}
	return as
}

// testArgs are the arguments of the test kinds.
type testArgs struct {
	N int `json:"n"`
}

// Kind implements leasehold.Args.
func (testArgs) Kind() string { return "test" }

// otherArgs is a second kind.
type otherArgs struct {
	N int `json:"n"`
}

// Kind implements leasehold.Args.
func (otherArgs) Kind() string { return "other" }

// workers registers fn for the "test" kind.
func (e *clientEnv) workers(fn func(ctx context.Context, job *leasehold.Job[testArgs]) error) *leasehold.Workers {
	e.Helper()
	ws := leasehold.NewWorkers()
	if err := leasehold.AddWorker(ws, leasehold.WorkFunc[testArgs](fn)); err != nil {
		e.Fatalf("AddWorker: %v", err)
	}
	return ws
}

// faultDriver wraps a real driver and can make its heartbeats fail, as a
// worker cut off from the database would see them, refuse every
// Finish batch that holds the first attempt of job refuse, as a database
// refuses an outcome it cannot store, and lose the reply of the next
// loseClaims claims that lease jobs, as a connection cut after the
// claim's commit does.
type faultDriver struct {
	driver.Driver
	cutOff     atomic.Bool
	holdFinish atomic.Bool // Finish fails, as during an outage
	refuse     atomic.Int64
	refused    atomic.Int64 // Finish calls refused
	loseClaims atomic.Int32
	lostClaims atomic.Int32 // claim replies lost
}

var errLostReply = errors.New("test: the connection was cut after the claim committed")

// Claim claims, and fails all the same when a lost reply is due.
func (f *faultDriver) Claim(ctx context.Context, p *driver.ClaimParams) ([]*leasehold.JobRow, error) {
	rows, err := f.Driver.Claim(ctx, p)
	if err == nil && len(rows) > 0 && f.loseClaims.Add(-1) >= 0 {
		f.lostClaims.Add(1)
		return nil, errLostReply
	}
	return rows, err
}

var errRefused = errors.New("test: the database refuses this outcome")

// Finish fails while holdFinish is set, and refuses batches that hold
// the first attempt of job refuse.
func (f *faultDriver) Finish(ctx context.Context, tx any, ps []*driver.FinishParams) ([]driver.FinishResult, error) {
	if f.holdFinish.Load() {
		return nil, errCutOff
	}
	for _, p := range ps {
		if p.ID == f.refuse.Load() && p.Attempt == 1 {
			f.refused.Add(1)
			return nil, errRefused
		}
	}
	return f.Driver.Finish(ctx, tx, ps)
}

var errCutOff = errors.New("test: worker cut off from the database")

// Refused tells a refusal from a failure on the way as a real driver
// does (driver.Refuser): errRefused is one, errCutOff is not, and the
// wrapped driver judges its own errors.
func (f *faultDriver) Refused(err error) bool {
	switch {
	case errors.Is(err, errRefused):
		return true
	case errors.Is(err, errCutOff):
		return false
	}
	return driver.IsRefused(f.Driver, err)
}

// Heartbeat fails while the driver is cut off.
func (f *faultDriver) Heartbeat(ctx context.Context, p *driver.HeartbeatParams) ([]*driver.HeartbeatResult, error) {
	if f.cutOff.Load() {
		return nil, errCutOff
	}
	return f.Driver.Heartbeat(ctx, p)
}

// gate is a handler-side barrier: started closes when the handler runs,
// and the handler blocks until release.
type gate struct {
	started chan struct{}
	release chan struct{}
	once    sync.Once
}

func newGate() *gate { return &gate{started: make(chan struct{}), release: make(chan struct{})} }

func (g *gate) markStarted() { g.once.Do(func() { close(g.started) }) }

func (e *clientEnv) waitGate(ch <-chan struct{}, what string) {
	e.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		e.Fatalf("timed out waiting for %s", what)
	}
}
