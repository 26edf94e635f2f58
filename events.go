package leasehold

import (
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/leasehold/leasehold/internal/maintenance"
	"github.com/leasehold/leasehold/leasetype"
)

// EventKind names what happened to a lease (see the constants).
type EventKind = leasetype.EventKind

// The kinds of Event, in the order a job meets them.
const (
	EventTakenOver       = leasetype.EventTakenOver       // a fetcher's claim took over an expired lease, ending its attempt lease_expired
	EventClaimed         = leasetype.EventClaimed         // a fetcher leased the job
	EventStarted         = leasetype.EventStarted         // its handler is about to run
	EventNotStarted      = leasetype.EventNotStarted      // claimed, but past its safe window: released unrun
	EventClaimedAgain    = leasetype.EventClaimedAgain    // a claim returned a lease held already: its running handler keeps it
	EventFinished        = leasetype.EventFinished        // its outcome was written (fence matched), or a reconciler's resolution committed
	EventFenceRefused    = leasetype.EventFenceRefused    // its outcome was refused: the lease was someone else's
	EventOutcomeDropped  = leasetype.EventOutcomeDropped  // its outcome was given up unwritten
	EventLeaseLost       = leasetype.EventLeaseLost       // its handler was cancelled: lease taken over or not renewed
	EventHeartbeat       = leasetype.EventHeartbeat       // a heartbeat statement renewed leases
	EventHeartbeatFailed = leasetype.EventHeartbeatFailed // a heartbeat statement failed
	EventFinishFailed    = leasetype.EventFinishFailed    // an outcome statement failed and will be retried
	EventClaimFailed     = leasetype.EventClaimFailed     // a claim or the probe for work failed
	EventRescued         = leasetype.EventRescued         // the stuck watcher moved an expired lease
)

// Event is one thing that happened to a lease of a client (see
// leasetype.Event for the fields each kind sets). Subscribe to receive
// them.
type Event = leasetype.Event

// DefaultEventBuffer is the channel capacity of a subscription.
const DefaultEventBuffer = 1024

// Subscribe returns a channel that receives the client's events of the
// given kinds (every kind when none is given), and a function that ends
// the subscription and closes the channel. Any number of subscribers may
// listen; none slows the client down: an event that finds a subscriber's
// channel full (DefaultEventBuffer events) is dropped for that subscriber
// and counted in Stats().EventsDropped. The client's own Stats are built
// on the same events, but never dropped.
func (c *Client) Subscribe(kinds ...EventKind) (<-chan Event, func()) {
	return c.SubscribeBuffered(DefaultEventBuffer, kinds...)
}

// SubscribeBuffered is Subscribe with a channel of buffer events (at
// least 1): a consumer that must miss nothing under bursts, such as a
// metrics exporter, gives itself room.
func (c *Client) SubscribeBuffered(buffer int, kinds ...EventKind) (<-chan Event, func()) {
	s := &subscriber{ch: make(chan Event, max(buffer, 1)), kinds: slices.Clone(kinds)}
	c.events.add(s)
	var once sync.Once
	return s.ch, func() { once.Do(func() { c.events.remove(s) }) }
}

// eventBus delivers the engine's events: to the client's counters first,
// then to every subscriber that wants them, without blocking.
type eventBus struct {
	stats stats
	// throughput counts finished attempts for the per-minute totals.
	throughput maintenance.Tally
	mu         sync.Mutex                    // serialises add and remove
	subs       atomic.Pointer[[]*subscriber] // copied on write; read without locking
}

func (b *eventBus) init() { b.subs.Store(&[]*subscriber{}) }

// emit is the engine's event sink. It must stay cheap: it runs on the hot
// path, three times per job.
func (b *eventBus) emit(ev Event) {
	b.stats.observe(&ev)
	b.tally(&ev)
	subs := *b.subs.Load()
	if len(subs) == 0 {
		return
	}
	ev.Time = time.Now()
	for _, s := range subs {
		if !s.send(ev) {
			b.stats.eventsDropped.Add(1)
		}
	}
}

// tally counts the attempts that ended, by queue and outcome: every
// written outcome, and every expired lease the watcher ended or a claim
// took over (ending its attempt in the same statement). A reconciler's
// resolution ends no attempt: the watcher counted the expired one.
func (b *eventBus) tally(ev *Event) {
	switch {
	case ev.Kind == EventFinished && ev.Job != nil && ev.ResolvedBy == nil:
		b.throughput.Add(ev.Job.Queue, ev.Outcome)
	case ev.Kind == EventRescued && ev.Rescued != nil:
		b.throughput.Add(ev.Rescued.Queue, OutcomeLeaseExpired)
	case ev.Kind == EventTakenOver && ev.Job != nil:
		b.throughput.Add(ev.Job.Queue, OutcomeLeaseExpired)
	}
}

func (b *eventBus) add(s *subscriber) {
	b.mu.Lock()
	defer b.mu.Unlock()
	subs := append(slices.Clone(*b.subs.Load()), s)
	b.subs.Store(&subs)
}

func (b *eventBus) remove(s *subscriber) {
	b.mu.Lock()
	subs := slices.DeleteFunc(slices.Clone(*b.subs.Load()), func(x *subscriber) bool { return x == s })
	b.subs.Store(&subs)
	b.mu.Unlock()
	s.close()
}

// subscriber is one subscription.
type subscriber struct {
	ch    chan Event
	kinds []EventKind // empty for all
	// mu orders sends before close: an emit that loaded the list before
	// remove may still be sending.
	mu     sync.RWMutex
	closed bool
}

// send delivers ev if the subscriber wants it; it reports false when ev
// was dropped because the channel was full.
func (s *subscriber) send(ev Event) bool {
	if len(s.kinds) > 0 && !slices.Contains(s.kinds, ev.Kind) {
		return true
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.closed {
		return true
	}
	select {
	case s.ch <- ev:
		return true
	default:
		return false
	}
}

func (s *subscriber) close() {
	s.mu.Lock()
	s.closed = true
	close(s.ch)
	s.mu.Unlock()
}
