package pgdriver

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// rescueIdleTimeout bounds how long the rescue's transaction may sit
// idle between its statements: a watcher that stops there (a paused
// process, a network cut) holds the row locks of jobs whose lease has
// run out, which every claim and other watcher then skips; without it the
// server keeps them until it notices the lost connection, by default
// hours later. Past it the server ends the session, the transaction rolls
// back and the next watcher tick, in any process, takes the jobs.
const rescueIdleTimeout = time.Second

// heldIdleTimeout bounds, the same way, the driver's other transactions
// of several statements: a periodic slot claim, which keeps every other
// process's claim of that schedule waiting on its row, and an insert of
// jobs with a scoped unique key, which keeps every other insert of one of
// those keys waiting on its index entry. They hold no lease, so the bound
// is looser than the rescue's: a client starved for a moment between two
// statements keeps its transaction, and one cut off lets the others go
// within seconds rather than hours. The transaction ended this way
// commits nothing, and its caller gets the error.
const heldIdleTimeout = 10 * time.Second

// beginBounded runs fn in a transaction on pool that the server ends,
// rolled back, once it has been idle between statements for longer than
// idle. The bound is set in the statement that begins the transaction, so
// it costs no extra round trip, and SET LOCAL keeps it to this
// transaction: the pooled session keeps its own setting.
func beginBounded(ctx context.Context, pool *pgxpool.Pool, idle time.Duration, fn func(pgx.Tx) error) error {
	begin := fmt.Sprintf("BEGIN; SET LOCAL idle_in_transaction_session_timeout = %d", idle.Milliseconds())
	return pgx.BeginTxFunc(ctx, pool, pgx.TxOptions{BeginQuery: begin}, fn)
}
