// Package drivertest is the conformance suite every leasehold driver runs.
//
// A driver's test file builds a Harness that opens fresh, migrated drivers
// on an empty database and calls RunDriver. Each invariant of the lease
// contract (docs/design.md) is one subtest that fails when the invariant is
// broken. Times are always compared with the driver's own clock
// (Driver.Now), never with the test process's clock, and the suite waits on
// database events (a polled clock or state, with a deadline) rather than on
// fixed sleeps.
package drivertest

import (
	"context"
	"testing"

	"github.com/leasehold/leasehold"
	"github.com/leasehold/leasehold/driver"
)

// Harness tells the suite how to open the driver under test.
type Harness struct {
	// Name names the subtest that groups the suite (for example
	// "postgres"); empty runs the invariants directly under t.
	Name string
	// Open returns a fresh, migrated driver on an empty database, closed at
	// test cleanup.
	Open func(t *testing.T) driver.Driver
	// OpenSecond returns another driver on the SAME database as d (another
	// pool / another *sql.DB), for racing-process tests. It is closed at
	// test cleanup.
	OpenSecond func(t *testing.T, d driver.Driver) driver.Driver
	// TxKinds lists ways to begin a caller transaction on d's database.
	TxKinds []TxKind
	// ResetIDs restarts d's job id sequence, so that the next insert
	// reuses the lowest id no job has, as a new primary can after an
	// asynchronous failover lost jobs. Tests that need it are skipped when
	// it is nil.
	ResetIDs func(t *testing.T, d driver.Driver)
	// LoseClaim returns job id to what it was before its last claim:
	// pending, its attempt one less, no lease, as a standby promoted
	// after an asynchronous failover shows a job whose claim's commit it
	// never received. Tests that need it are skipped when it is nil.
	LoseClaim func(t *testing.T, d driver.Driver, id int64)
	// RowLocks is true when a caller transaction that writes or locks a
	// job row holds only that row (PostgreSQL), false when it holds every
	// write of the database (SQLite's write lock). Tests of the first
	// behaviour are skipped when it is false.
	RowLocks bool
	// HoldRow, when set, locks job id's row in a transaction of its own,
	// changing nothing, until the returned hold's Release. The ClaimByID
	// races start their racers behind it and release it once at least two
	// wait: they have then read the job as claimable, so a ClaimByID that
	// does not lock the row before it re-checks it lets several win every
	// time, not only when their statements happen to overlap. Leave it
	// nil where a transaction holds every write (SQLite).
	HoldRow func(t *testing.T, d driver.Driver, id int64) *RowHold
	// RecordMigration records version as applied in d's
	// leasehold_migrations without changing the schema, as a newer
	// leasehold would. Tests that need it are skipped when it is nil.
	RecordMigration func(t *testing.T, d driver.Driver, version int)
}

// TxKind is one kind of caller transaction a driver accepts (such as a
// pgx.Tx or a *sql.Tx).
type TxKind struct {
	// Name names the subtest, such as "pgx.Tx".
	Name string
	// Begin begins a transaction on d's database and returns the value to
	// pass as the driver's tx argument, with funcs that commit and roll it
	// back. A transaction left open is rolled back at test cleanup.
	Begin func(t *testing.T, d driver.Driver) (tx any, commit, rollback func() error)
	// Complete calls the driver package's typed completion function for
	// this kind (such as pgdriver.CompleteTx for a pgx.Tx) with tx, which
	// Begin returned or is nil: it asserts tx to the function's parameter
	// type (a nil tx becomes that type's nil) and returns its error.
	// Client-level tests that need it are skipped when it is nil.
	Complete func(ctx context.Context, tx any, job *leasehold.JobRow) error
}

// invariant is one conformance test.
type invariant struct {
	name string
	run  func(c *tc)
}

// invariants lists every test of the suite, in the order they run.
func invariants() []invariant {
	return []invariant{
		{"ClaimAtomic", testClaimAtomic},
		{"ClaimByIDRace", testClaimByIDRace},
		{"ClaimSetsLease", testClaimSetsLease},
		{"ClaimRespectsRunAt", testClaimRespectsRunAt},
		{"ClaimOrder", testClaimOrder},
		{"ClaimFilters", testClaimFilters},
		{"TakeOver", testTakeOver},
		{"TakeOverRace", testTakeOverRace},
		{"TakeOverAfterCursor", testTakeOverAfterCursor},
		{"TakeOverFlagged", testTakeOverFlagged},
		{"TakeOverNeverOwnLease", testTakeOverNeverOwnLease},
		{"FencingWrongToken", testFencingWrongToken},
		{"FencingAfterTakeOver", testFencingAfterTakeOver},
		{"FencingSameOwner", testFencingSameOwner},
		{"FencingMixedBatch", testFencingMixedBatch},
		{"FencingGroupedBatch", testFencingGroupedBatch},
		{"FinishOutcomes", testFinishOutcomes},
		{"FinishInvalidTransition", testFinishInvalidTransition},
		{"FinishAppliesTransitions", testFinishAppliesTransitions},
		{"EndedAttempts", testEndedAttempts},
		{"Heartbeat", testHeartbeat},
		{"HeartbeatKeepsLease", testHeartbeatKeepsLease},
		{"Transactions", testTransactions},
		{"UnsupportedTx", testUnsupportedTx},
		{"RescueExpired", testRescueExpired},
		{"RescueQueues", testRescueQueues},
		{"OwnLeasesLeft", testOwnLeasesLeft},
		{"RescueConcurrent", testRescueConcurrent},
		{"RescueReconcile", testRescueReconcile},
		{"RescueReconcileConcurrent", testRescueReconcileConcurrent},
		{"Resolve", testResolve},
		{"ResolveCancelRequested", testResolveCancelRequested},
		{"ResolveFenced", testResolveFenced},
		{"ResolveStaleAttempt", testResolveStaleAttempt},
		{"OperatorOnReconciling", testOperatorOnReconciling},
		{"CancelReconcileJobLeavesJobStuck", testCancelReconcileJobLeavesJobStuck},
		{"DeleteReconcileJobLeavesJobStuck", testDeleteReconcileJobLeavesJobStuck},
		{"RetryJobAttemptGuard", testRetryJobAttemptGuard},
		{"FenceTx", testFenceTx},
		{"FenceTxJudgesAtTheCall", testFenceTxJudgesAtTheCall},
		{"FenceTxHoldsOffTakeover", testFenceTxHoldsOffTakeover},
		{"Checkpoints", testCheckpoints},
		{"CheckpointsDeleted", testCheckpointsDeleted},
		{"InsertFields", testInsertFields},
		{"UniqueKey", testUniqueKey},
		{"UniqueKeyRace", testUniqueKeyRace},
		{"UniqueWhileUnfinished", testUniqueWhileUnfinished},
		{"UniqueScopeRace", testUniqueScopeRace},
		{"UniqueWhileUnfinishedChurn", testUniqueChurn},
		{"UniqueWindow", testUniqueWindow},
		{"UniqueScopeBulk", testUniqueScopeBulk},
		{"UniqueScopeInTx", testUniqueScopeInTx},
		{"UniqueBatchRace", testUniqueBatchRace},
		{"UniqueBatchIDOrder", testUniqueBatchIDOrder},
		{"UniqueWindowBatchClock", testUniqueWindowBatchClock},
		{"RetryJobScopedKeyHeld", testRetryJobScopedKeyHeld},
		{"UUIDPerJob", testUUIDPerJob},
		{"UUIDTaken", testUUIDTaken},
		{"IdempotencyKeyNotReusedWithID", testIdempotencyKeyNotReusedWithID},
		{"InsertBulk", testInsertBulk},
		{"RetryJob", testRetryJob},
		{"RetryRacesCompletion", testRetryRacesCompletion},
		{"CancelJob", testCancelJob},
		{"CancelRequestedEndsCancelled", testCancelRequestedEndsCancelled},
		{"CancelRequestedRecordedCancelled", testCancelRequestedRecordedCancelled},
		{"RescueCancelRequestedReported", testRescueCancelRequestedReported},
		{"OperatorActionsAfterHeartbeat", testOperatorActionsAfterHeartbeat},
		{"NotFound", testNotFound},
		{"ListJobs", testListJobs},
		{"ListJobsSearch", testListJobsSearch},
		{"QueueStatsNeverClaimed", testQueueStatsNeverClaimed},
		{"QueueStatsAncientRunAt", testQueueStatsAncientRunAt},
		{"OperatorErrorText", testOperatorErrorText},
		{"Purge", testPurge},
		{"PurgeQueues", testPurgeQueues},
		{"DeleteJob", testDeleteJob},
		{"QueueStats", testQueueStats},
		{"PausedQueueNotClaimed", testPausedQueueNotClaimed},
		{"QueueStatsPaused", testQueueStatsPaused},
		{"ClaimableQueues", testClaimableQueues},
		{"ActiveQueueStats", testActiveQueueStats},
		{"ActiveQueueStatsLimit", testActiveQueueStatsLimit},
		{"Throughput", testThroughput},
		{"ListByFinish", testListByFinish},
		{"PeriodicSlotRace", testPeriodicSlotRace},
		{"PeriodicEarlierSlotRefused", testPeriodicEarlierSlotRefused},
		{"PeriodicRegister", testPeriodicRegister},
		{"PeriodicInsertFailure", testPeriodicInsertFailure},
		{"PeriodicScopedSlotKey", testPeriodicScopedSlotKey},
		{"PeriodicClaimDeadline", testPeriodicClaimDeadline},
		{"Migrate", testMigrate},
		{"SchemaTooNewRefused", testSchemaTooNewRefused},
	}
}

// RunDriver runs every driver-level invariant of the lease contract against
// the driver h opens, each as a subtest with its own fresh database.
func RunDriver(t *testing.T, h Harness) {
	t.Helper()
	if h.Open == nil || h.OpenSecond == nil {
		t.Fatal("drivertest: Harness.Open and Harness.OpenSecond are required")
	}
	run := func(t *testing.T) {
		for _, inv := range invariants() {
			t.Run(inv.name, func(t *testing.T) { inv.run(newTC(t, h)) })
		}
	}
	if h.Name == "" {
		run(t)
		return
	}
	t.Run(h.Name, run)
}

// RowHold is a job row that a transaction of the harness holds locked
// (Harness.HoldRow).
type RowHold struct {
	// Queued returns how many sessions wait for the row's lock, directly
	// or behind another waiter.
	Queued func(ctx context.Context) (int, error)
	// Release ends the transaction, the row unchanged.
	Release func() error
}
