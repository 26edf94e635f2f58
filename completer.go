package leasehold

import (
	"context"
	"sync"
	"sync/atomic"

	"github.com/leasehold/leasehold/driver"
)

// completerFlushers is how many finish statements may be in flight at
// once. One: while it is written, the next batch gathers, so batches grow
// with the load. A second flusher halves the batches and doubles the
// statements (and commits) for no gain in throughput: at 20,000 jobs/s
// PostgreSQL spends its time per statement, not per row.
const completerFlushers = 1

// completer batches the fenced outcomes of finished handlers: each flush
// writes everything that has gathered since the previous one in a single
// statement, so the batch size grows with the load and an idle client adds
// no latency.
type completer struct {
	c       *Client
	in      chan *finishItem
	wg      sync.WaitGroup
	abandon chan struct{} // closed when Stop's deadline passes
	once    sync.Once
	mu      sync.RWMutex // guards closed against concurrent submit
	closed  bool
	// lastOK is when (Client.mono) a finish statement last succeeded.
	lastOK atomic.Int64

	// tryCtx is the parent of every finish statement: giveUp cancels it,
	// so a statement hanging on an unreachable database cannot hold Stop.
	tryCtx    context.Context
	cancelTry context.CancelFunc
}

func newCompleter(c *Client) *completer {
	k := &completer{c: c, in: make(chan *finishItem, 4*DefaultCompleteBatch), abandon: make(chan struct{})}
	k.tryCtx, k.cancelTry = context.WithCancel(context.Background())
	return k
}

func (k *completer) start() {
	for range completerFlushers {
		k.wg.Add(1)
		go func() { defer k.wg.Done(); k.loop() }()
	}
}

// submit queues an outcome. After close it drops it: the lease then
// expires and the watcher returns the job (a straggler at shutdown).
func (k *completer) submit(item *finishItem) {
	k.mu.RLock()
	defer k.mu.RUnlock()
	if k.closed {
		k.c.cfg.Logger.Warn("leasehold: outcome after shutdown dropped; the lease will expire",
			"job", item.p.ID, "outcome", item.p.Outcome)
		k.c.stats.dropped.Add(1)
		k.forget(item)
		return
	}
	k.in <- item
}

// close stops accepting outcomes and waits until every submitted one is
// written, or until ctx is done (then the unwritten leases expire and the
// watcher returns their jobs).
func (k *completer) close(ctx context.Context) {
	k.mu.Lock()
	k.closed = true
	close(k.in)
	k.mu.Unlock()
	done := make(chan struct{})
	go func() { k.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		k.giveUp()
		<-done
	}
}

func (k *completer) giveUp() { k.once.Do(func() { close(k.abandon); k.cancelTry() }) }

func (k *completer) loop() {
	// One batch and one parameter slice serve every flush of this loop.
	batch := make([]*finishItem, 0, DefaultCompleteBatch)
	params := make([]*driver.FinishParams, 0, DefaultCompleteBatch)
	for item := range k.in {
		batch = append(batch[:0], item)
	gather:
		for len(batch) < DefaultCompleteBatch {
			select {
			case it, ok := <-k.in:
				if !ok {
					break gather
				}
				batch = append(batch, it)
			default:
				break gather
			}
		}
		params = params[:0]
		for _, it := range batch {
			params = append(params, &it.p)
		}
		k.flush(batch, params)
		clear(batch) // let the flushed leases be collected
		clear(params)
	}
}

// forget drops the item's lease from the running set: its outcome is
// written, refused or given up, and it needs no more heartbeats.
func (k *completer) forget(it *finishItem) {
	if it.rj != nil {
		k.c.forget(it.rj)
	}
}

// account updates the counters for a written batch. After a failed try a
// refusal is ambiguous (the earlier try may have committed), so it is not
// counted as a refused late write.
func (k *completer) account(batch []*finishItem, applied []int64, retried bool) {
	ok := make(map[int64]bool, len(applied))
	for _, id := range applied {
		ok[id] = true
	}
	s := &k.c.stats
	for _, it := range batch {
		switch {
		case ok[it.p.ID]:
			s.countApplied(it.p.Outcome)
		case it.afterTx:
			s.completed.Add(1) // CompleteTx committed; the safety write found nothing to do
		case !retried:
			s.finishRefused.Add(1)
		}
	}
}
