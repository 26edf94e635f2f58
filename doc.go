// Package leasehold is a job queue whose jobs live in the application's own
// SQL database (PostgreSQL through pgdriver, or SQLite through
// sqlitedriver), and where every claim of a job is a lease: a time-bounded,
// fenced record of which worker instance owns it.
//
// # The lease contract
//
//   - A claim is one atomic conditional UPDATE (batched: up to one
//     statement per queue per fetch). A job is claimable when it is pending
//     and due, or processing with an expired lease. Racing workers: exactly
//     one wins each job.
//   - Every claim increments and persists the job's attempt, sets
//     lease_owner to the worker instance (Client.Owner: host, pid, random
//     suffix) and lease_until to the database's now + LeaseTTL. The job
//     row holds the open attempt; its row of attempt history is written
//     when the attempt ends, together with the state change that ends it.
//   - (id, attempt) with the owner is the fencing token. Every write made
//     on behalf of a lease (heartbeat, complete, retry, fail, snooze,
//     release, and CompleteTx inside the caller's transaction) carries
//     WHERE id AND status = 'processing' AND lease_owner AND attempt. When
//     no row matches, the write is refused (ErrLeaseLost) and changes
//     nothing: a late worker can never overwrite the outcome of the worker
//     that took its job over.
//   - Heartbeats renew all of a client's leases in one statement (one per
//     20,000 leases) every HeartbeatInterval (default LeaseTTL/3). A
//     renewal that finds a lease gone cancels the handler's context with
//     cause ErrLeaseLost. On PostgreSQL a lease whose row a business
//     transaction holds locked (after FenceTx, CheckpointTx or CompleteTx)
//     is skipped, neither renewed nor lost, until that transaction ends.
//   - A worker that cannot renew (database unreachable, process frozen and
//     resumed) cancels its handler once LeaseTTL - LeaseSafetyMargin has
//     passed on its own monotonic clock since the last renewal it sent,
//     before another worker can take the job over.
//   - No handler starts on a lease past that window, measured from when
//     the claim was sent (a late reply, a wait for a worker): the lease is
//     released instead and Stats.SkippedLate counts it. A handler calls
//     CheckLease right before each outside-facing step (a payment call)
//     to learn whether its lease is still inside the window.
//   - The stuck watcher (every WatcherInterval, default 30 s) returns
//     processing jobs with expired leases to pending, flags them stuck in
//     queues configured with FlagStuck, sends them to reconciling with a
//     reconcile job in queues configured with Reconcile (ResolveReconcile
//     decides, fenced by the reconciler's own lease), fails them when their
//     retry budget is spent, cancels them when a cancel was requested
//     (outside the queues that reconcile, where the reconciler decides
//     first), and records lease_expired in their history.
//   - FenceTx asserts the lease inside a business transaction, and
//     Checkpoint records durable checkpoints under it, both refused with
//     ErrLeaseLost once the lease is lost.
//   - Only the database clock decides whether a lease has expired.
//   - JobRow.IdempotencyKey comes from a random UUID stored with the job
//     at insert: the same on every attempt of the job, and never another
//     job's, even one that reuses a lost job's id after a failover.
//   - Stop lets running jobs finish for ShutdownTimeout, then cancels the
//     rest and releases their leases at once (in a queue with FlagStuck or
//     Reconcile their leases are left to expire instead, as a crashed
//     worker's would); Stopped is closed when it is done.
//
// # Guarantees and their limits
//
// Execution is at-least-once: a handler may run more than once for a job
// (a worker can die after doing the work but before completing it). At any
// instant at most one lease of a job is valid, and only the holder of the
// valid lease can record an outcome. Exactly-once effects come from
// completing the job in the same transaction as the business write
// (from a handler, the driver's typed pgdriver.CompleteTx or
// sqlitedriver.CompleteTx; Client.CompleteTx is the dynamic form), or from passing JobRow.IdempotencyKey to an outside system;
// an outside call cannot be fenced, which is what the safety margin is for.
// Jobs inserted with InsertTx exist only if the caller's transaction
// commits. Read job state from the primary only, never from a replica; with
// asynchronous replication a failover can lose committed jobs, so use
// synchronous replication (synchronous_commit = on with a synchronous
// standby) where that matters.
//
// # Retries
//
// A handler error is retried after RetryPolicy.NextRetry (default
// exponential backoff, see ExponentialBackoff) until the job has been
// charged MaxAttempts attempts (default 20); Permanent(err) fails at once,
// Snooze(d) reschedules without charging the budget, Cancel(err) cancels,
// and a panic is a failure recorded with its stack.
//
// # Examples
//
// The package's Example functions are compiled by go test, and those with
// an Output comment run, so they stay true. Example_sqlite runs the whole
// payment flow on SQLite (a worker that charges an outside provider with
// the job's idempotency key after CheckLease, then completes the job in
// the same transaction as its business write); Example_postgres, the same
// flow on PostgreSQL, is compiled only, as it needs a server.
// ExampleClient_Insert,
// ExampleAddWorker, ExampleSnooze, ExamplePermanent and the ExampleClient_
// operator examples show one call each.
package leasehold
