// Package pgdriver is the PostgreSQL driver of leasehold, built on pgx v5.
//
// # Usage
//
// Open a driver on a URL (the driver owns its pool), or wrap a pool you
// already have (you keep owning it), then apply the schema once at start-up:
//
//	drv, err := pgdriver.Open(ctx, "postgres://app@db/app")
//	// or: drv, err := pgdriver.New(pool)
//	if err != nil { ... }
//	defer drv.Close()
//	if _, err := drv.Migrate(ctx); err != nil { ... }
//
// Migrate is idempotent and safe when several processes run it at once: each
// embedded migration is applied in its own transaction under a transaction-
// scoped advisory lock (keyed by the current schema). Table names are
// unqualified, so the tables live in the first schema of the connection's
// search_path.
//
// # Heartbeat pool
//
// Besides the main pool, every Driver opens a second, small pool (at most two
// connections, same connection settings as the main pool) used only by
// Heartbeat. A main pool saturated by handlers, inserts or claims therefore
// never delays a lease renewal. Close always closes the heartbeat pool, and
// closes the main pool only when Open created it.
//
// # Transactions
//
// Insert and Finish accept a caller's transaction, so jobs are enqueued, and
// leases completed (fenced), atomically with the caller's own writes. The
// accepted values of their tx argument are:
//
//   - nil: the driver uses its own implicit transaction;
//   - a pgx.Tx (for example from pgxpool.Pool.Begin or pgx.Conn.Begin);
//   - a *sql.Tx from a database/sql DB opened with the pgx stdlib driver
//     (github.com/jackc/pgx/v5/stdlib, driver name "pgx").
//
// Any other value (including a nil *sql.Tx or a nil pointer implementing
// pgx.Tx) is refused with an error wrapping leasehold.ErrUnsupportedTx.
//
// From a handler, complete a job in the caller's transaction with
// CompleteTx (a pgx.Tx) or CompleteSQLTx (a *sql.Tx): the transaction's
// type is checked at compile time, and the running client comes from the
// handler's context, so the handler needs no client variable.
// Statements run inside a caller's transaction take their times from
// statement_timestamp(), so a long transaction does not backdate its jobs.
//
// # Notifications
//
// Insert and InsertBulk send pg_notify('leasehold_insert', queue) for the
// queues of jobs inserted with Notify set: inside the caller's transaction
// when there is one, else just after the driver's own commit, coalesced (a
// notifying commit takes a database-wide lock through its WAL flush, so one
// NOTIFY per insert would make inserts wait for each other). Listen (the
// driver.Notifier
// implementation) wakes workers on those hints over a dedicated connection,
// reconnecting with a capped backoff. NOTIFY is only a hint: notifications
// sent while a listener is disconnected are lost, they are shared by every
// schema of the database, and NOTIFY takes a global lock at commit. Workers
// must keep polling; correctness never depends on a notification.
//
// # Time and fencing
//
// Every time comes from the database clock; durations travel as microseconds
// and are added to now() in SQL. Claim, Heartbeat and Finish are each one
// statement for a whole batch, and every write made on behalf of a lease is
// fenced by (id, status = 'processing', lease_owner, attempt).
//
// Finish and RescueExpired move jobs out of processing by applying the
// driver.Transition the client computed, column by column; the SQL holds no
// state machine of its own and knows no outcome's name. A batch whose
// leases share one owner and one transition (typically all completed) is
// written by a statement with the transition's fields as scalar parameters,
// about a quarter cheaper than one with a value per lease. RescueExpired
// locks the expired jobs (FOR UPDATE SKIP LOCKED, so concurrent watchers
// take disjoint jobs), asks RescueParams.Decide for each transition and
// applies them, fenced as Finish is and by the lease still being expired,
// in one transaction.
//
// # Transactions of several statements
//
// The driver's own transactions that hold row locks or unique index
// entries between statements (the rescue, a periodic slot claim, an
// insert of a batch with a unique key) set idle_in_transaction_session_timeout
// for themselves when they begin: 1 s for the rescue, 10 s for the
// others. A client paused or cut off inside one then lets the other
// processes go when the server ends its session, instead of when the
// server notices the lost connection; its transaction commits nothing.
package pgdriver
