package driver

import (
	"context"
	"time"

	"github.com/leasehold/leasehold/leasetype"
)

// Driver is the storage a Client consumes: one implementation per database
// (pgdriver for PostgreSQL, sqlitedriver for SQLite). Every method takes a
// context and, where it has inputs, a pointer to a params struct, so fields
// can be added without breaking implementations.
//
// Every method that writes on behalf of a lease (Heartbeat, Finish,
// RescueExpired) must be fenced by (id, status = 'processing',
// lease_owner, attempt), and all times must come from the database clock.
// A job leaves processing only by a Transition, which the driver applies
// as given: the state machine is the engine's, not the driver's. The
// conformance suite in drivertest checks each rule.
type Driver interface {
	// Migrate applies the embedded schema migrations in order and reports
	// the versions before and after. It is idempotent and safe when several
	// processes run it at once. It applies nothing and returns a
	// *SchemaVersionError matching ErrSchemaTooNew when the database has a
	// migration newer than the driver embeds.
	Migrate(ctx context.Context) (*MigrateResult, error)

	// SchemaVersion returns the database's highest applied migration (0
	// when never migrated) and the highest one the driver embeds.
	SchemaVersion(ctx context.Context) (*SchemaVersion, error)

	// Insert inserts jobs, in tx when tx is non-nil (a transaction type the
	// driver accepts, else ErrUnsupportedTx) and in its own transaction
	// otherwise. A job whose unique key another job holds (see
	// InsertParams.UniqueScoped) is not inserted; the job that holds it is
	// returned with Duplicate set, also when it was inserted earlier in the
	// same batch. Results are in the order of params. Concurrent inserts
	// of one key insert exactly one job: the database's unique indexes
	// decide.
	Insert(ctx context.Context, tx any, params []*InsertParams) ([]*leasetype.InsertResult, error)

	// InsertBulk inserts many jobs as fast as the database allows (COPY on
	// PostgreSQL) and returns how many were inserted. Jobs whose unique key
	// another job holds, in the table or earlier in params, are skipped.
	InsertBulk(ctx context.Context, params []*InsertParams) (int64, error)

	// Claim leases up to Limit claimable jobs of one queue in one atomic
	// conditional UPDATE. The job row holds each new attempt (its claim and
	// heartbeat times) while it runs, and ListAttempts shows it running;
	// its history row is written once, by whatever ends it (Finish,
	// RescueExpired, or a later claim's takeover). It leases nothing while
	// the queue is paused (PauseQueue): the same statement checks it, so a
	// claim that starts after a pause committed never takes a job of the
	// queue. It returns fewer than Limit jobs only when no more were
	// claimable: the engine takes a short claim as the end of the queue's
	// backlog, and claims again only when woken or at the next poll, so a
	// driver that capped its batches below Limit would drain a queue one
	// batch per poll interval.
	Claim(ctx context.Context, p *ClaimParams) ([]*leasetype.JobRow, error)

	// ClaimableQueues returns which of p.Queues have work a Claim of
	// p.Kinds would lease now: a due pending job, or, for a queue whose
	// claims take over (its value in p.Queues), a processing job whose
	// lease, not p.Owner's, expired with budget left and no cancel request
	// (as ClaimParams.TakeOver). Paused queues
	// are left out. It reads in one statement, through the ready-jobs and
	// lease indexes, and writes nothing; the result is sorted, without
	// duplicates. The engine calls it once per poll interval and claims
	// only from the queues it returns, so that idle queues cost one
	// statement per process, not one per queue.
	ClaimableQueues(ctx context.Context, p *ClaimableParams) ([]string, error)

	// ClaimByID leases one known job if it is claimable. It returns
	// (nil, nil) when the job exists but is not claimable, which includes
	// a job of a paused queue, and ErrJobNotFound when it does not exist.
	ClaimByID(ctx context.Context, p *ClaimByIDParams) (*leasetype.JobRow, error)

	// Heartbeat renews the given leases of one owner in one statement and
	// returns those still held. A lease missing from the result is lost.
	// On a database whose transactions lock single rows (PostgreSQL), it
	// does not wait for a lease whose job row another transaction has
	// locked (the handler's own business transaction after FenceTx,
	// CheckpointTx or CompleteTx): that lease is returned Locked, not
	// renewed, and the others are renewed without it. Where a caller's
	// transaction holds the whole database (SQLite's write lock), it waits
	// for that lock, as every write does, and never returns Locked.
	Heartbeat(ctx context.Context, p *HeartbeatParams) ([]*HeartbeatResult, error)

	// Finish applies the Transition of each lease in p, fenced by (ID,
	// status = 'processing', Owner, Attempt), in one statement or
	// transaction (in tx when tx is non-nil), and writes the history row
	// of each attempt it ends (see Transition). It returns one result per
	// job whose fence matched, saying whether a cancel request turned its
	// transition into cancelled (FinishResult.Cancelled: the history row
	// then records Transition.OutcomeWhenCancelled), learnt from what the
	// statement returns, never by another statement; the others were
	// refused and left unchanged.
	// It returns an error, and writes nothing, when a transition fails
	// Transition.Validate. A batch names each lease at most once (the
	// completer sends it so): of two entries for one lease, one applies
	// and which one is not specified (the drivers differ).
	Finish(ctx context.Context, tx any, p []*FinishParams) ([]FinishResult, error)

	// RescueExpired takes up to Limit processing jobs whose lease expired
	// (database clock), oldest lease first, asks p.Decide for the
	// transition of each and applies it as Finish does, fenced by (id,
	// status = 'processing', lease_owner, attempt) and the lease still
	// expired, writing the history rows of the attempts it ends with the
	// transitions' outcomes. A
	// job another watcher is rescuing at the same moment is skipped, so
	// concurrent watchers are harmless. It returns the jobs moved, by id.
	RescueExpired(ctx context.Context, p *RescueParams) ([]*leasetype.RescuedJob, error)

	// FenceTx asserts, inside the caller's transaction tx (required), that
	// the lease p names is still held: the job is processing under
	// (ID, Owner, Attempt) and its lease has not expired by the database
	// clock at the moment of the check (clock_timestamp() on PostgreSQL).
	// It locks the job row (or holds the write lock), so no takeover can
	// commit before tx ends. It returns ErrLeaseLost when the lease is not
	// held, and ErrUnsupportedTx for a tx the driver does not accept.
	FenceTx(ctx context.Context, tx any, p *FenceParams) error

	// Checkpoint records one checkpoint of the lease p.Lease names, fenced
	// as FenceTx is, in tx when it is non-nil and in its own transaction
	// otherwise. It returns the row written, or ErrLeaseLost (nothing
	// written) when the lease is not held.
	Checkpoint(ctx context.Context, tx any, p *CheckpointParams) (*leasetype.CheckpointRow, error)

	// Checkpoints returns the checkpoints of job jobID, in the order they
	// were written (none for a job without any, or a missing job).
	Checkpoints(ctx context.Context, jobID int64) ([]*leasetype.CheckpointRow, error)

	// Resolve applies p.Transition to job p.JobID, which must be
	// reconciling at attempt p.Attempt, and records p.Resolution on that
	// attempt's history row, fenced in one transaction (tx when non-nil)
	// by the reconcile job's own lease (p.ID, status = 'processing',
	// p.Owner, p.Attempt of the lease, not expired by the database clock)
	// as FenceTx checks it. A job whose cancel was requested while it was
	// processing is cancelled, not made pending, by a
	// transition to pending (a retry or a snooze): the operator asked
	// that it not run again; p.CancelledResolution, when set, is then
	// recorded in place of p.Resolution. The other transitions apply as
	// given. It
	// returns the job's new state, ErrLeaseLost when the reconcile lease
	// is not held and ErrNotReconciling when the job is not reconciling
	// at that attempt; on an error it writes nothing.
	Resolve(ctx context.Context, tx any, p *ResolveParams) (leasetype.JobState, error)

	// GetJob returns one job, or ErrJobNotFound.
	GetJob(ctx context.Context, id int64) (*leasetype.JobRow, error)

	// ListAttempts returns a job's history, oldest first: the ended
	// attempts' history rows, then the running attempt, if any, read from
	// the job row.
	ListAttempts(ctx context.Context, jobID int64) ([]*leasetype.Attempt, error)

	// ListJobs returns jobs matching the filters, ordered by id
	// (descending when Desc is set), at most p.Limit of them, or
	// DefaultListLimit when p.Limit is 0.
	ListJobs(ctx context.Context, p *leasetype.ListParams) ([]*leasetype.JobRow, error)

	// RetryJob makes job p.ID, pending, stuck, reconciling, failed,
	// cancelled or (with p.Completed) completed, pending now with a fresh
	// retry budget (FreeAttempts = Attempt). It returns ErrJobRunning for
	// a processing job, ErrJobCompleted for a completed one without
	// p.Completed, and ErrUniqueKeyHeld for a finished job whose scoped
	// unique key another job holds, changing nothing in each case. The
	// state is checked by the UPDATE itself, so a job that completes
	// meanwhile is never retried by a call that did not allow it. A
	// driver whose write and read of the job are separate statements
	// tries again when the write matched nothing but the job read allows
	// the action; after a few such misses it returns
	// leasehold.ErrJobChanging, as do CancelJob and DeleteJob.
	RetryJob(ctx context.Context, p *RetryParams) (*leasetype.JobRow, error)

	// CancelJob cancels a pending, stuck or reconciling job at once, and sets
	// CancelRequested on a processing one. It returns ErrJobFinished, with
	// the job, for a terminal job. When the job is a reconcile job whose
	// job is still reconciling at the attempt it reconciles, that job
	// goes to stuck in the same transaction (its last_error and the
	// attempt's resolution say the reconcile job was cancelled by an
	// operator), so that no job is left reconciling with no reconcile job
	// to decide it; a running reconciler's resolution is then refused with
	// ErrNotReconciling.
	CancelJob(ctx context.Context, id int64) (*leasetype.JobRow, error)

	// DeleteJob deletes one completed, failed or cancelled job, its
	// history and its checkpoints, and returns the job as it was. For an
	// unfinished job it deletes nothing and returns the job with
	// ErrJobRunning (processing) or ErrJobNotFinished (pending, stuck,
	// reconciling); for a missing one ErrJobNotFound. A reconcile job
	// deleted while its job is still reconciling at that attempt (one
	// whose handler returned without resolving) sends that job to stuck
	// in the same transaction, as CancelJob does.
	DeleteJob(ctx context.Context, id int64) (*leasetype.JobRow, error)

	// Purge deletes up to Limit terminal jobs (with their history and
	// checkpoints) of Queues (nil: every queue) finished
	// longer than OlderThan ago, and returns how many it deleted.
	Purge(ctx context.Context, p *PurgeParams) (int64, error)

	// QueueStats returns per-queue counts by state, the age of the oldest
	// claimable pending job, the number of live leases, the due jobs
	// never claimed, per kind, and whether the queue is paused, ordered by
	// queue. A paused queue with no jobs is reported too.
	QueueStats(ctx context.Context) ([]*leasetype.QueueStats, error)

	// ActiveQueueStats is QueueStats for the unfinished jobs only, at a
	// cost that grows with neither the finished jobs nor, beyond
	// p.CountLimit, the backlog: it reports each queue that has unfinished
	// jobs or is paused, with each unfinished state's count exact up to
	// the limit and the database's estimate beyond it (listed in
	// Estimated), the age of the oldest due job and the live and expired
	// leases exact, and NeverClaimed counted among the queue's first
	// min(p.CountLimit, DefaultUnclaimedSample) due jobs in claim order
	// (where the jobs of a kind no worker handles stay). Every read uses
	// an index.
	ActiveQueueStats(ctx context.Context, p *ActiveStatsParams) ([]*leasetype.QueueStats, error)

	// RecordThroughput adds counts of finished jobs to the per-minute
	// totals (minute by the database clock at the call) and deletes the
	// totals older than p.Keep.
	RecordThroughput(ctx context.Context, p *ThroughputParams) error

	// Throughput returns the per-minute totals of the last p.Since, by
	// the database clock, oldest first.
	Throughput(ctx context.Context, since time.Duration) ([]*leasetype.ThroughputBucket, error)

	// PauseQueue records queue as paused, whether or not it has jobs:
	// from then on no Claim or ClaimByID leases its jobs, in any process.
	// Leases already held are unaffected (heartbeats and finishes go on).
	// Pausing a paused queue changes nothing, and keeps its PausedAt.
	PauseQueue(ctx context.Context, queue string) error

	// ResumeQueue lets claims lease queue's jobs again, and sends the
	// queue's wake-up hint when the driver is a Notifier, so that idle
	// workers claim at once. Resuming a queue that is not paused changes
	// nothing.
	ResumeQueue(ctx context.Context, queue string) error

	// PeriodicRegister records a schedule in leasehold_periodic (or
	// updates its spec, kind, queue and next slot) without touching its
	// last slot, and returns the row as stored.
	PeriodicRegister(ctx context.Context, p *PeriodicRegisterParams) (*leasetype.PeriodicRow, error)

	// PeriodicInsert claims slot p.Slot of schedule p.Name and, when the
	// claim wins, inserts p.Job, in one transaction: the claim is one
	// conditional write that succeeds only when the schedule has no last
	// slot or an earlier one, so any number of processes may try the
	// same slot at once and exactly one wins. A slot earlier than or
	// equal to the last one is refused (Claimed false) and nothing is
	// inserted. The caller decides that the slot is due, from Now.
	PeriodicInsert(ctx context.Context, p *PeriodicInsertParams) (*PeriodicInsertResult, error)

	// PeriodicList returns every recorded schedule, ordered by name.
	PeriodicList(ctx context.Context) ([]*leasetype.PeriodicRow, error)

	// PeriodicDelete deletes the record of a schedule and reports
	// whether there was one. A process still running the schedule
	// records it again at its next slot.
	PeriodicDelete(ctx context.Context, name string) (bool, error)

	// Now returns the database clock.
	Now(ctx context.Context) (time.Time, error)

	// Close releases what the driver opened itself.
	Close() error
}

// Notifier is implemented by drivers that can wake workers when jobs are
// inserted by any process (LISTEN/NOTIFY on PostgreSQL). Listen blocks until
// ctx is done, calling wake with a queue name for each hint; it reconnects
// by itself and returns only ctx's error. Hints are never needed for
// correctness: workers also poll.
type Notifier interface {
	Listen(ctx context.Context, wake func(queue string)) error
}

// FinishLingerer is implemented by drivers whose finish statements cost
// the database more per statement than per outcome (a server: a round
// trip and a commit, each a WAL flush). Under load (a finish statement
// wrote leasehold.DefaultCompleteLingerFrom outcomes or more) a client then
// lets the next batch gather for up to FinishLinger before writing it, so
// that the finish statements stay near one per FinishLinger whatever the
// rate. Without it (sqlitedriver: statements run in the process, one
// writer at a time, and a longer write only holds up the claims behind it)
// outcomes are written as they come. A driver that wraps another
// implements it by forwarding FinishLingerOf of the wrapped one: zero
// means no lingering.
type FinishLingerer interface {
	FinishLinger() time.Duration
}

// FinishLingerOf returns d's FinishLinger, or zero when d does not
// implement FinishLingerer.
func FinishLingerOf(d Driver) time.Duration {
	if l, ok := d.(FinishLingerer); ok {
		return l.FinishLinger()
	}
	return 0
}

// TxChecker is implemented by drivers that can tell, without a round
// trip, whether they accept a caller's transaction value: CheckTx returns
// an error wrapping ErrUnsupportedTx for a value of a type the driver
// does not accept, or a nil one of a type it does (a nil *sql.Tx), and
// nil for one it accepts. The client checks a caller's transaction with
// it before the other checks of a call (CompleteTx outside a handler
// reports the foreign transaction, not the missing handler); without it,
// a foreign transaction is refused when the driver comes to use it. A
// driver that wraps another implements it by forwarding CheckTxOf of the
// wrapped one.
type TxChecker interface {
	CheckTx(tx any) error
}

// CheckTxOf returns d's CheckTx of tx, or nil when d does not implement
// TxChecker.
func CheckTxOf(d Driver, tx any) error {
	if c, ok := d.(TxChecker); ok {
		return c.CheckTx(tx)
	}
	return nil
}

// InsertParams is one job to insert.
type InsertParams struct {
	Kind        string
	Queue       string
	Args        []byte // JSON object
	Metadata    []byte // JSON object, nil for {}
	Priority    int
	MaxAttempts int
	UniqueKey   string // empty for none
	// UniqueWhileUnfinished scopes UniqueKey to the jobs that are not
	// completed, failed or cancelled (see UniqueScoped).
	UniqueWhileUnfinished bool
	// UniqueWindow, when positive, scopes UniqueKey to the window of this
	// length (whole microseconds), aligned on the Unix epoch of the
	// database clock, that holds the insert (see WindowStart).
	UniqueWindow time.Duration
	// UUID is the job's random RFC 4122 version 4 UUID, stored as
	// JobRow.UUID; the driver generates one when it is empty.
	UUID string
	// RunAt, when non-zero, is the absolute time the job becomes claimable.
	RunAt time.Time
	// RunIn, when RunAt is zero, delays the job by this long from the
	// database clock's now.
	RunIn time.Duration
	// Notify asks the driver to send a wake-up hint for the queue.
	Notify bool
}

// ClaimParams selects the jobs a Claim may lease.
type ClaimParams struct {
	Queue string
	// Kinds are the kinds this worker has handlers for; other jobs are
	// left alone.
	Kinds []string
	Owner string
	TTL   time.Duration
	Limit int
	// TakeOver allows claiming processing jobs whose lease expired (with
	// budget left and no cancel request) as well as pending ones, but
	// never a lease of Owner itself: Owner still answers for it (its
	// handler may have run, and its outcome wait to be written after the
	// database was out of reach for longer than the TTL), and Owner's own
	// watcher (RescueParams.Held) or another process's claim or watcher
	// takes the lease once Owner no longer holds it. It is false for
	// queues whose policy flags expired jobs as stuck.
	TakeOver bool
	// After, when set, is a lower bound of the pending jobs the claim
	// needs to consider: the caller knows of no claimable pending job at
	// or before this key in claim order. PostgreSQL starts its index scan
	// after it, which skips the entries of rows that an open transaction
	// keeps vacuum from removing; SQLite, which has no such entries,
	// ignores it. It never bounds the takeover candidates. See
	// docs/design.md, "Claim cursor".
	After *ClaimKey
}

// ClaimKey is a job's place in claim order: priority, then run_at, then id.
type ClaimKey struct {
	Priority int
	RunAt    time.Time
	ID       int64
}

// KeyOf returns job's place in claim order.
func KeyOf(job *leasetype.JobRow) ClaimKey {
	return ClaimKey{Priority: job.Priority, RunAt: job.RunAt, ID: job.ID}
}

// Less reports whether k comes before o in claim order.
func (k ClaimKey) Less(o ClaimKey) bool {
	if k.Priority != o.Priority {
		return k.Priority < o.Priority
	}
	if !k.RunAt.Equal(o.RunAt) {
		return k.RunAt.Before(o.RunAt)
	}
	return k.ID < o.ID
}

// ClaimByIDParams selects one job to lease.
type ClaimByIDParams struct {
	ID    int64
	Owner string
	TTL   time.Duration
	// TakeOver allows claiming the job while it is processing and its
	// lease expired (with budget left and no cancel request) as well as
	// while it is pending, but never when the lease is Owner's own, as
	// ClaimParams.TakeOver: Owner still answers for it.
	TakeOver bool
}

// LeaseRef identifies one lease: the fencing token (ID, Attempt) of Owner.
type LeaseRef struct {
	ID      int64
	Attempt int
}

// HeartbeatParams renews Leases, all held by Owner, to now + TTL.
type HeartbeatParams struct {
	Owner  string
	TTL    time.Duration
	Leases []LeaseRef
}

// HeartbeatResult is one lease still held after a heartbeat.
type HeartbeatResult struct {
	ID              int64
	CancelRequested bool
	// Locked is true when the lease is held but was not renewed: another
	// transaction had its job row locked. The lease keeps the expiry of
	// its last renewal.
	Locked bool
}

// FinishParams is one fenced write for a lease: the lease's fencing token
// (ID, Owner, Attempt) and the Transition to apply when it still holds.
// The Transition is embedded, so its fields read as the params' own
// (p.Outcome is the outcome recorded on the attempt row).
type FinishParams struct {
	ID      int64
	Owner   string
	Attempt int
	Transition
}

// FinishResult is one job whose fence matched in Finish.
type FinishResult struct {
	ID int64
	// Cancelled is true when the job was cancelled where its transition
	// made it pending or stuck (Transition.Cancellable): an operator asked
	// to cancel it while it ran. Its attempt's history row records
	// Transition.OutcomeWhenCancelled.
	Cancelled bool
}

// FinishedIDs returns the ids of rs, in their order.
func FinishedIDs(rs []FinishResult) []int64 {
	ids := make([]int64, len(rs))
	for i, r := range rs {
		ids[i] = r.ID
	}
	return ids
}

// RescueParams configures one pass of the stuck watcher.
type RescueParams struct {
	// Decide returns the transition of one expired lease, given its job
	// as stored (state processing, lease expired, lease_owner the expired
	// owner). The engine passes the state machine's
	// (internal/statemachine.Rescuer). A driver calls it while it holds
	// the jobs it is rescuing, so it must be quick and must not call the
	// driver. It is required.
	Decide func(job *leasetype.JobRow) Transition
	// Limit caps the jobs one pass moves; 0 means DefaultRescueLimit.
	Limit int
	// Queues, when non-nil, limits the pass to the expired leases of
	// these queues: a client's own watcher passes the queues whose policy
	// it knows (its Config.Queues), so that it never applies its policy
	// to another queue's leases (a payment queue that reconciles them,
	// say). Nil means every queue; an empty, non-nil slice, none.
	Queues []string
	// Owner and Held: the pass leaves alone the expired leases of Owner
	// whose job ids are in Held, the leases Owner still answers for: a
	// handler running, or an outcome waiting to be written (after the
	// database was out of reach for longer than the TTL, say). A
	// client's watcher passes its own, so that it never runs again a job
	// whose handler it ran; with no Owner, no lease is left alone.
	Owner string
	Held  []int64
}

// FenceParams names the lease FenceTx asserts.
type FenceParams struct {
	ID      int64
	Owner   string
	Attempt int
}

// CheckpointParams is one checkpoint to record under Lease.
type CheckpointParams struct {
	Lease FenceParams
	// Name says what the checkpoint marks, such as "charge-sent".
	Name string
	// Data is a JSON value (nil for {}).
	Data []byte
}

// ResolveParams is a reconciler's decision on a reconciling job: the
// reconcile job's lease (ID, Owner, LeaseAttempt), the reconciling job
// and attempt it decides on (JobID, Attempt, from its ReconcileArgs), and
// what to write.
type ResolveParams struct {
	// ID, Owner and LeaseAttempt are the reconcile job's fencing token.
	ID           int64
	Owner        string
	LeaseAttempt int
	// JobID and Attempt name the reconciling job and its expired attempt.
	JobID   int64
	Attempt int
	// Transition is applied to the reconciling job as Finish applies one
	// (status, run_at, free_attempts, last_error, finished_at), except
	// that its attempt row, ended when the lease expired, keeps its
	// outcome and error: Outcome and AttemptError are not written. Its
	// State is not reconciling and Spawn is nil.
	Transition
	// Resolution is recorded on the reconciling attempt's history row.
	Resolution string
	// CancelledResolution, when not empty, is recorded instead when the
	// job is cancelled where the transition made it pending (its cancel
	// was requested; see Driver.Resolve).
	CancelledResolution string
}

// RetryParams names the job an operator retries.
type RetryParams struct {
	ID int64
	// Completed allows retrying a completed job, whose handler then runs
	// again; without it RetryJob refuses one with ErrJobCompleted.
	Completed bool
	// Attempt, when not 0, is the attempt the caller saw the job at: the
	// UPDATE that makes the job pending checks it too, and a job claimed
	// again since (Attempt moved on) is refused with ErrJobChanging,
	// changing nothing. 0 retries the job at any attempt.
	Attempt int
}

// PurgeParams selects finished jobs to delete.
type PurgeParams struct {
	// OlderThan is how long ago, by the database clock, a job must have
	// finished to be deleted.
	OlderThan time.Duration
	// Limit caps the jobs one call deletes; 0 means the driver's default
	// (10,000).
	Limit int
	// Queues, when non-nil, limits the call to the finished jobs of these
	// queues: a client's retention passes the queues it is configured
	// for (its Config.Queues), so that it never deletes another
	// service's jobs, nor frees the unique keys they hold. Nil means
	// every queue (the operator's PurgeFinished, `leasehold purge`); an
	// empty, non-nil slice, none, as in RescueParams.
	Queues []string
}

// DefaultListLimit is ListParams.Limit when it is 0: a ListJobs call
// with no limit returns at most this many jobs.
const DefaultListLimit = 100

// DefaultCountLimit is ActiveStatsParams.CountLimit when it is 0.
const DefaultCountLimit = 10_000

// DefaultUnclaimedSample caps the due jobs per queue ActiveQueueStats
// reads for NeverClaimed: min(CountLimit, DefaultUnclaimedSample).
const DefaultUnclaimedSample = 1_000

// ActiveStatsParams bounds what ActiveQueueStats reads.
type ActiveStatsParams struct {
	// CountLimit is how many jobs of one state (and, for pending jobs,
	// one priority) of a queue are counted exactly before the count is
	// estimated; 0 means DefaultCountLimit.
	CountLimit int
}

// ThroughputParams is one flush of finished-job counts.
type ThroughputParams struct {
	// Counts are added to the current minute's totals.
	Counts []leasetype.ThroughputCount
	// Keep is how long totals are kept; older ones are deleted. Zero
	// deletes none.
	Keep time.Duration
}
