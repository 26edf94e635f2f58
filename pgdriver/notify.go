package pgdriver

import (
	"context"
	"maps"
	"slices"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// notifyTimeout bounds one coalesced NOTIFY statement.
const notifyTimeout = 10 * time.Second

// coalescedNotifySQL sends one hint per queue in $1, in a transaction that
// writes nothing else and so need not wait for its commit record to be
// flushed (synchronous_commit off for it alone): it then holds the
// database-wide notify lock for microseconds instead of a disk flush. A
// crash can only lose the hint, which LISTEN/NOTIFY never promises to
// keep anyway; the jobs it announces were committed, durably, before.
const coalescedNotifySQL = `WITH async AS (SELECT set_config('synchronous_commit', 'off', true))
SELECT pg_notify('` + notifyChannel + `', q) FROM unnest($1::text[]) AS q, async`

// notifier sends the insert hints of the driver's own transactions,
// coalesced. A transaction that calls pg_notify takes a database-wide lock
// at commit and holds it through its WAL flush, so notifying commits run
// one at a time: with one NOTIFY per insert, inserts queue behind each
// other's flushes (8 ms per insert at 1,000 inserts/s on a local disk).
// Instead, an insert commits without notifying and asks the notifier,
// which sends one NOTIFY for every queue asked for since its previous one,
// with at most one in flight. Each hint is sent after the commit of the
// inserts it covers, so no wake-up is lost. Inserts in a caller's
// transaction still notify inside it: their commit is the caller's.
//
// Under mu, whenever pending is not empty a sender is running: request
// starts one when it adds a queue and none runs, and a sender stops only
// once it finds nothing pending. Once closed, request adds nothing and
// starts nothing, so wg.Add is never called after close has begun to
// wait, and close's wait ends once what was pending has been sent.
type notifier struct {
	pool *pgxpool.Pool

	mu      sync.Mutex
	pending map[string]bool
	running bool // a goroutine is sending
	closed  bool // close was called: requests are dropped
	wg      sync.WaitGroup
}

func newNotifier(pool *pgxpool.Pool) *notifier {
	return &notifier{pool: pool, pending: map[string]bool{}}
}

// request asks for a hint on each of queues, sent soon after the call.
// After close it does nothing.
func (n *notifier) request(queues []string) {
	if len(queues) == 0 {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return
	}
	for _, q := range queues {
		n.pending[q] = true
	}
	if n.running {
		return
	}
	n.running = true
	n.wg.Add(1)
	go n.send()
}

// send notifies the pending queues until none is left, closed or not:
// close relies on it to send what was asked for before. Errors are
// dropped: hints are never needed for correctness (workers poll).
func (n *notifier) send() {
	defer n.wg.Done()
	for {
		n.mu.Lock()
		if len(n.pending) == 0 {
			n.running = false
			n.mu.Unlock()
			return
		}
		queues := slices.Sorted(maps.Keys(n.pending))
		clear(n.pending)
		n.mu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), notifyTimeout)
		_, _ = n.pool.Exec(ctx, coalescedNotifySQL, queues)
		cancel()
	}
}

// close drops the requests made after it, waits until what was requested
// before has been sent (at most the statement in flight and one more,
// each bounded by notifyTimeout), then returns. Its single wait is safe:
// once closed is set, no request calls wg.Add.
func (n *notifier) close() {
	n.mu.Lock()
	n.closed = true
	n.mu.Unlock()
	n.wg.Wait()
}
